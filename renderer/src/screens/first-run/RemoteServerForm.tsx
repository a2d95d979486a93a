import { useState, type FormEvent, type InputHTMLAttributes } from 'react';
import type { AppStatus, ConnectionTestResult, RemoteSetupInput } from '../../../../shared/bridge.js';
import { useBridge } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { validateRemoteSetup, type FieldErrors } from '../../forms/validate.js';
import { ConnectionSteps } from './ConnectionSteps.js';

const UUID_PATTERN = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';

export function RemoteServerForm({ onConfigured }: { onConfigured: (status: AppStatus) => void }) {
  const client = useBridge();
  const [input, setInput] = useState<RemoteSetupInput>({ serverUrl: '', tokenUrl: '', clientId: '', clientSecret: '', organizationId: '' });
  const [testing, setTesting] = useState(false);
  const [saving, setSaving] = useState(false);
  const [result, setResult] = useState<ConnectionTestResult | null>(null);
  const [error, setError] = useState<BridgeError | null>(null);
  const [fieldErrors, setFieldErrors] = useState<FieldErrors<SetupField>>({});
  const [caFileName, setCaFileName] = useState<string | null>(null);

  const payload = (): RemoteSetupInput => ({ ...input, serverUrl: input.serverUrl.trim(), clientId: input.clientId.trim(), organizationId: input.organizationId.trim(), tokenUrl: input.tokenUrl?.trim() || undefined });
  /** The clinic's CA certificate as IT exported it: PEM text as it is, a binary .cer as base64. */
  const chooseCa = async (file: File | undefined) => {
    setResult(null);
    if (!file) {
      setCaFileName(null);
      setInput(({ caCertificate: _dropped, ...current }) => current);
      return;
    }
    const bytes = new Uint8Array(await file.arrayBuffer());
    const text = new TextDecoder().decode(bytes);
    const caCertificate = text.includes('-----BEGIN') ? text : btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join(''));
    setCaFileName(file.name);
    setInput((current) => ({ ...current, caCertificate }));
  };
  const update = (field: SetupField) => (value: string) => {
    setInput((current) => ({ ...current, [field]: value }));
    setResult(null);
    setFieldErrors((current) => (current[field] ? { ...current, [field]: undefined } : current));
  };
  /** The form's own check first: a field left empty or mistyped is named beside it, nothing is sent. */
  const checked = (): boolean => {
    const errors = validateRemoteSetup(input);
    setFieldErrors(errors);
    const first = FIELD_ORDER.find((field) => errors[field]);
    if (first) document.getElementById(FIELD_IDS[first])?.focus();
    return first === undefined;
  };

  const test = async () => {
    if (testing || saving || !checked()) return;
    setTesting(true);
    setError(null);
    try {
      setResult(await client.testConnection(payload()));
    } catch (failure) {
      setError(toBridgeError(failure));
    } finally {
      setTesting(false);
    }
  };

  const connect = async (event: FormEvent) => {
    event.preventDefault();
    if (testing || saving || !checked()) return;
    setSaving(true);
    setError(null);
    try {
      const tested = await client.testConnection(payload());
      setResult(tested);
      if (tested.ok) onConfigured(await client.setupRemote(payload()));
    } catch (failure) {
      setError(toBridgeError(failure));
    } finally {
      setSaving(false);
    }
  };

  return (
    <form className="setup-panel form" noValidate onSubmit={(event) => void connect(event)} aria-label="Connect to a server">
      <TextField label="Server address" hint="For example https://docs.smile-clinic.example" value={input.serverUrl} onChange={update('serverUrl')} error={fieldErrors.serverUrl} type="url" required autoComplete="url" />
      <TextField label="Token address (optional)" hint="Leave empty when the server signs in its own clients" value={input.tokenUrl ?? ''} onChange={update('tokenUrl')} error={fieldErrors.tokenUrl} type="url" />
      <div className="form-row">
        <TextField label="Client ID" value={input.clientId} onChange={update('clientId')} error={fieldErrors.clientId} required autoComplete="username" />
        <TextField label="Client secret" value={input.clientSecret} onChange={update('clientSecret')} error={fieldErrors.clientSecret} type="password" required autoComplete="current-password" />
      </div>
      <TextField label="Organization ID" hint="The clinic’s identifier, a UUID such as 0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01" value={input.organizationId} onChange={update('organizationId')} error={fieldErrors.organizationId} pattern={UUID_PATTERN} required />
      <div className="field">
        <label htmlFor="field-server-ca-certificate">Server certificate (optional)</label>
        <input id="field-server-ca-certificate" type="file" accept=".pem,.crt,.cer,.der" aria-describedby="field-server-ca-certificate-hint" onChange={(event) => void chooseCa(event.target.files?.[0])} />
        <span className="field-hint" id="field-server-ca-certificate-hint">
          {caFileName
            ? `Trusting ${caFileName} for this server, besides this computer’s own certificate authorities.`
            : 'Only when the server uses the clinic’s own certificate authority or a self-signed certificate: the CA certificate file (.crt, .pem or .cer) from IT.'}
        </span>
      </div>
      {result ? <ConnectionSteps result={result} /> : null}
      {error ? <ErrorNotice error={error} /> : null}
      <div className="form-actions">
        {/* Busy buttons are aria-disabled, not disabled: a disabled button drops the keyboard focus to the page. */}
        <button type="button" className="button" onClick={() => void test()} aria-disabled={testing || saving}>
          {testing ? <span className="spinner spinner-small" aria-hidden="true" /> : <Icon name="link" size={16} />}
          {testing ? 'Testing…' : 'Test connection'}
        </button>
        <button type="submit" className="button primary" aria-disabled={testing || saving}>
          {saving ? <span className="spinner spinner-small" aria-hidden="true" /> : <Icon name="arrowRight" size={16} />}
          Connect
        </button>
      </div>
    </form>
  );
}

function fieldId(label: string): string {
  return `field-${label.toLowerCase().replace(/\W+/g, '-')}`;
}

type SetupField = 'serverUrl' | 'tokenUrl' | 'clientId' | 'clientSecret' | 'organizationId';
const FIELD_ORDER: SetupField[] = ['serverUrl', 'tokenUrl', 'clientId', 'clientSecret', 'organizationId'];
const FIELD_IDS: Record<SetupField, string> = {
  serverUrl: fieldId('Server address'),
  tokenUrl: fieldId('Token address (optional)'),
  clientId: fieldId('Client ID'),
  clientSecret: fieldId('Client secret'),
  organizationId: fieldId('Organization ID'),
};

export function TextField({ label, hint, error, value, onChange, ...rest }: { label: string; hint?: string; error?: string | undefined; value: string; onChange: (value: string) => void } & Omit<InputHTMLAttributes<HTMLInputElement>, 'value' | 'onChange'>) {
  const id = fieldId(label);
  const describedBy = [error ? `${id}-error` : null, hint ? `${id}-hint` : null].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} value={value} onChange={(event) => onChange(event.target.value)} aria-describedby={describedBy} aria-invalid={error ? true : undefined} {...rest} />
      {error ? <FieldError id={`${id}-error`}>{error}</FieldError> : null}
      {hint ? (
        <span className="field-hint" id={`${id}-hint`}>
          {hint}
        </span>
      ) : null}
    </div>
  );
}

export function FieldError({ id, children }: { id: string; children: string }) {
  return (
    <span className="field-error" id={id}>
      {children}
    </span>
  );
}
