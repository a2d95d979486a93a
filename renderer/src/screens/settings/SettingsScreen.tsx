import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { RECHECK_MINUTES, type AppStatus, type SettingsPatch, type SettingsView } from '../../../../shared/bridge.js';
import { useBridge, useBridgeQuery } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { ErrorNotice, InfoNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { validateSettings, type FieldErrors, type SettingsFields } from '../../forms/validate.js';
import { FieldError } from '../first-run/RemoteServerForm.js';

interface SettingsDraft {
  concurrency: string;
  /** Minutes, as the select's value ('0': never). */
  recheckMinutes: string;
  ignorePatterns: string;
  bandwidthMegabytes: string;
  webhookPort: string;
  webhookPublicUrl: string;
  clientSecret: string;
  /** A CA certificate file chosen to replace the one trusted (its contents), or null: unchanged. */
  caCertificate: string | null;
  caFileName: string | null;
}

const MEGABYTE = 1_000_000;

function draftFrom(settings: SettingsView): SettingsDraft {
  return {
    concurrency: String(settings.concurrency),
    recheckMinutes: String(settings.recheckMinutes),
    ignorePatterns: settings.ignorePatterns.join('\n'),
    bandwidthMegabytes: settings.bandwidthLimitBytesPerSecond > 0 ? String(settings.bandwidthLimitBytesPerSecond / MEGABYTE) : '',
    webhookPort: settings.webhook.port > 0 ? String(settings.webhook.port) : '',
    webhookPublicUrl: settings.webhook.publicUrl ?? '',
    clientSecret: '',
    caCertificate: null,
    caFileName: null,
  };
}

function patchFrom(draft: SettingsDraft, saved: SettingsView): SettingsPatch {
  const bandwidth = Number(draft.bandwidthMegabytes.replace(',', '.'));
  const recheckMinutes = Number(draft.recheckMinutes);
  return {
    concurrency: Number(draft.concurrency),
    // Sent only when changed: the default stays unwritten in the settings file.
    ...(recheckMinutes !== saved.recheckMinutes ? { recheckMinutes } : {}),
    ignorePatterns: draft.ignorePatterns.split('\n').map((line) => line.trim()).filter(Boolean),
    bandwidthLimitBytesPerSecond: draft.bandwidthMegabytes.trim() && bandwidth > 0 ? Math.round(bandwidth * MEGABYTE) : 0,
    webhook: { port: Number(draft.webhookPort.trim() || 0), publicUrl: draft.webhookPublicUrl.trim() || null },
    ...(draft.clientSecret ? { clientSecret: draft.clientSecret } : {}),
    ...(draft.caCertificate !== null ? { caCertificate: draft.caCertificate } : {}),
  };
}

export function SettingsScreen({ status }: { status: AppStatus }) {
  const client = useBridge();
  const settings = useBridgeQuery((bridge) => bridge.getSettings(), []);
  const [draft, setDraft] = useState<SettingsDraft | null>(null);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<BridgeError | null>(null);
  const [fieldErrors, setFieldErrors] = useState<FieldErrors<keyof SettingsFields>>({});
  useEffect(() => {
    if (settings.data) setDraft(draftFrom(settings.data));
  }, [settings.data]);

  const update = (field: keyof SettingsDraft) => (value: string) => {
    setDraft((current) => (current ? { ...current, [field]: value } : current));
    setSaved(false);
    setFieldErrors((current) => (field in current ? { ...current, [field]: undefined } : current));
  };
  const save = async (event: FormEvent) => {
    event.preventDefault();
    // aria-disabled while saving (a disabled button would drop the keyboard focus): a second press waits.
    if (!draft || !settings.data || saving) return;
    // Checked here first, so a mistyped field is named beside it in plain words.
    const errors = validateSettings(draft);
    setFieldErrors(errors);
    const first = (['webhookPort', 'webhookPublicUrl', 'concurrency', 'bandwidthMegabytes'] as const).find((field) => errors[field]);
    if (first) {
      document.getElementById(SETTINGS_FIELD_IDS[first])?.focus();
      return;
    }
    setSaving(true);
    setError(null);
    try {
      const next = await client.updateSettings(patchFrom(draft, settings.data!));
      settings.setData(next);
      setSaved(true);
    } catch (failure) {
      setError(toBridgeError(failure));
    } finally {
      setSaving(false);
    }
  };

  return (
    <div className="screen">
      <header className="screen-header">
        <div>
          <h1>Settings</h1>
          <p className="screen-subtitle">Connection, notifications and how uploads behave on this computer.</p>
        </div>
      </header>
      {settings.error ? <ErrorNotice error={settings.error} /> : null}
      {draft && settings.data ? (
        <form className="settings-form" noValidate onSubmit={(event) => void save(event)}>
          <ServerSection
            status={status}
            maskedSecret={settings.data.maskedSecret}
            clientSecret={draft.clientSecret}
            onSecretChange={update('clientSecret')}
            caFileName={draft.caFileName}
            onCaChosen={(caCertificate, caFileName) => {
              setDraft((current) => (current ? { ...current, caCertificate, caFileName } : current));
              setSaved(false);
            }}
          />
          <WebhookSection status={status} errors={fieldErrors} port={draft.webhookPort} publicUrl={draft.webhookPublicUrl} onPortChange={update('webhookPort')} onPublicUrlChange={update('webhookPublicUrl')} />
          <SyncSection draft={draft} update={update} errors={fieldErrors} />
          {error ? <ErrorNotice error={error} title="The settings were not saved" /> : null}
          <div className="form-actions sticky-actions">
            {saved ? (
              <span className="saved-note" role="status">
                <Icon name="checkCircle" size={16} /> Saved
              </span>
            ) : null}
            <button type="button" className="button quiet" onClick={() => settings.data && setDraft(draftFrom(settings.data))}>
              Undo changes
            </button>
            <button type="submit" className="button primary" aria-disabled={saving}>
              {saving ? 'Saving…' : 'Save settings'}
            </button>
          </div>
        </form>
      ) : null}
    </div>
  );
}

function SettingsSection({ title, description, children }: { title: string; description: string; children: ReactNode }) {
  return (
    <section className="card settings-section" aria-label={title}>
      <div className="settings-section-intro">
        <h2>{title}</h2>
        <p className="muted small">{description}</p>
      </div>
      <div className="settings-section-fields">{children}</div>
    </section>
  );
}

function ReadOnlyField({ label, value, mono }: { label: string; value: string; mono?: boolean }) {
  return (
    <div className="field read-only">
      <span className="field-label">{label}</span>
      <span className={mono ? 'field-value mono' : 'field-value'}>{value}</span>
    </div>
  );
}

function ServerSection({
  status,
  maskedSecret,
  clientSecret,
  onSecretChange,
  caFileName,
  onCaChosen,
}: {
  status: AppStatus;
  maskedSecret: string | null;
  clientSecret: string;
  onSecretChange: (value: string) => void;
  caFileName: string | null;
  onCaChosen: (caCertificate: string | null, fileName: string | null) => void;
}) {
  const server = status.server;
  /** PEM text as it is, a binary .cer as base64 (what the bridge carries). */
  const chooseCa = async (file: File | undefined) => {
    if (!file) return onCaChosen(null, null);
    const bytes = new Uint8Array(await file.arrayBuffer());
    const text = new TextDecoder().decode(bytes);
    onCaChosen(text.includes('-----BEGIN') ? text : btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join('')), file.name);
  };
  return (
    <SettingsSection title="Server and credentials" description={status.mode === 'embedded' ? 'The server runs on this computer.' : 'The clinic server this computer uploads to.'}>
      <ReadOnlyField label="Server address" value={server?.url ?? '—'} mono />
      <ReadOnlyField label="Token address" value={server?.tokenUrl ?? '—'} mono />
      {server && status.mode === 'remote' ? (
        <div className="field">
          <label htmlFor="settings-server-ca">Server certificate</label>
          <input id="settings-server-ca" type="file" accept=".pem,.crt,.cer,.der" aria-describedby="settings-server-ca-hint" onChange={(event) => void chooseCa(event.target.files?.[0])} />
          <span className="field-hint" id="settings-server-ca-hint">
            {caFileName
              ? `${caFileName} will be trusted for this server once you save.`
              : 'Only when the server uses the clinic’s own certificate authority or a self-signed certificate: the CA certificate file (.crt, .pem or .cer) from IT.'}
          </span>
        </div>
      ) : null}
      {server && server.trustedCertificates.length > 0 ? (
        <ReadOnlyField
          label="Server certificate authority"
          value={server.trustedCertificates.map((certificate) => `${certificate.subject} · SHA-256 ${certificate.fingerprint} · valid until ${certificate.validTo}`).join('; ')}
          mono
        />
      ) : null}
      <div className="form-row">
        <ReadOnlyField label="Client ID" value={server?.clientId ?? '—'} mono />
        <ReadOnlyField label="Organization" value={server?.organizationName ? `${server.organizationName}` : (server?.organizationId ?? '—')} />
      </div>
      <div className="field">
        <label htmlFor="settings-secret">Client secret</label>
        <div className="secret-row">
          <span className="masked-secret mono" aria-label="Current secret, hidden">
            <Icon name="lock" size={14} /> {maskedSecret ?? 'Not stored'}
          </span>
          <input id="settings-secret" type="password" value={clientSecret} onChange={(event) => onSecretChange(event.target.value)} placeholder="Enter a new secret to replace it" autoComplete="new-password" />
        </div>
        <span className="field-hint">{status.secrets.backend === 'keychain' ? 'Stored in the operating system’s keychain.' : 'Stored in an encrypted file on this computer.'}</span>
      </div>
      {status.secrets.clientSecretMissing ? <InfoNotice tone="warning">The client secret is not stored on this computer any more, so nothing is uploaded. Enter it above and save.</InfoNotice> : null}
      {status.secrets.warning ? <InfoNotice tone="warning">{status.secrets.warning}</InfoNotice> : null}
    </SettingsSection>
  );
}

const SETTINGS_FIELD_IDS: Record<keyof SettingsFields, string> = {
  concurrency: 'settings-concurrency',
  bandwidthMegabytes: 'settings-bandwidth',
  webhookPort: 'settings-webhook-port',
  webhookPublicUrl: 'settings-webhook-url',
};

/** aria-invalid and the message's id for a settings field that failed its check. */
function invalid(errors: FieldErrors<keyof SettingsFields>, field: keyof SettingsFields) {
  return errors[field] ? { 'aria-invalid': true, 'aria-describedby': `${SETTINGS_FIELD_IDS[field]}-error` } : {};
}

function FieldMessage({ errors, field }: { errors: FieldErrors<keyof SettingsFields>; field: keyof SettingsFields }) {
  const message = errors[field];
  return message ? <FieldError id={`${SETTINGS_FIELD_IDS[field]}-error`}>{message}</FieldError> : null;
}

function WebhookSection({ status, errors, port, publicUrl, onPortChange, onPublicUrlChange }: { status: AppStatus; errors: FieldErrors<keyof SettingsFields>; port: string; publicUrl: string; onPortChange: (value: string) => void; onPublicUrlChange: (value: string) => void }) {
  const webhook = status.webhook;
  return (
    <SettingsSection title="Server notifications" description="The server tells this computer about changes (webhooks). Behind a tunnel, give the tunnel’s public https address.">
      <div className="form-row">
        <div className="field narrow">
          <label htmlFor="settings-webhook-port">Listener port</label>
          <input id="settings-webhook-port" type="number" min={0} max={65535} value={port} onChange={(event) => onPortChange(event.target.value)} {...invalid(errors, 'webhookPort')} placeholder="Any free port" />
          <FieldMessage errors={errors} field="webhookPort" />
        </div>
        <div className="field">
          <label htmlFor="settings-webhook-url">Public address</label>
          <input id="settings-webhook-url" type="url" value={publicUrl} onChange={(event) => onPublicUrlChange(event.target.value)} {...invalid(errors, 'webhookPublicUrl')} placeholder="https://clinic-tunnel.example" spellCheck={false} />
          <FieldMessage errors={errors} field="webhookPublicUrl" />
        </div>
      </div>
      <p className="small listener-status">
        <span className={webhook.listening ? 'dot dot-online' : 'dot dot-offline'} aria-hidden="true" />
        {webhook.listening ? `Listening on ${webhook.localUrl ?? 'this computer'}` : 'Not listening'}
        {webhook.subscribed ? ' · subscribed on the server' : ''}
      </p>
      {webhook.error ? <ErrorNotice error={{ message: webhook.error }} /> : null}
    </SettingsSection>
  );
}

function SyncSection({ draft, update, errors }: { draft: SettingsDraft; update: (field: keyof SettingsDraft) => (value: string) => void; errors: FieldErrors<keyof SettingsFields> }) {
  return (
    <SettingsSection title="Uploads" description="How many files go at once, how fast, how often synced files are checked on the server, and which files are never uploaded.">
      <div className="form-row">
        <div className="field narrow">
          <label htmlFor="settings-concurrency">Files at once</label>
          <input id="settings-concurrency" type="number" min={1} max={16} value={draft.concurrency} onChange={(event) => update('concurrency')(event.target.value)} {...invalid(errors, 'concurrency')} />
          <FieldMessage errors={errors} field="concurrency" />
        </div>
        <div className="field narrow">
          <label htmlFor="settings-bandwidth">Speed limit (MB/s)</label>
          <input id="settings-bandwidth" type="number" min={0} step="0.1" value={draft.bandwidthMegabytes} onChange={(event) => update('bandwidthMegabytes')(event.target.value)} {...invalid(errors, 'bandwidthMegabytes')} placeholder="No limit" />
          <FieldMessage errors={errors} field="bandwidthMegabytes" />
        </div>
      </div>
      <div className="field">
        <label htmlFor="settings-recheck">Check synced files on the server</label>
        <select id="settings-recheck" value={draft.recheckMinutes} onChange={(event) => update('recheckMinutes')(event.target.value)} aria-describedby="settings-recheck-hint">
          {recheckChoices(Number(draft.recheckMinutes)).map((minutes) => (
            <option key={minutes} value={String(minutes)}>
              {recheckLabel(minutes)}
            </option>
          ))}
        </select>
        <span className="field-hint" id="settings-recheck-hint">
          Finds scans the server has lost since they were verified: those still in the folder are uploaded again by themselves. A check also follows the server’s own notice of a loss.
        </span>
      </div>
      <div className="field">
        <label htmlFor="settings-ignore">Files to skip</label>
        <textarea id="settings-ignore" rows={4} value={draft.ignorePatterns} onChange={(event) => update('ignorePatterns')(event.target.value)} spellCheck={false} aria-describedby="settings-ignore-hint" />
        <span className="field-hint" id="settings-ignore-hint">
          One pattern per line, such as <code>*.bak</code>. Temporary and system files (<code>~$*</code>, <code>*.tmp</code>, <code>.DS_Store</code>, <code>Thumbs.db</code>) are always skipped.
        </span>
      </div>
    </SettingsSection>
  );
}

/** The intervals offered; one set elsewhere (the sync CLI's `config --recheck-minutes`) is listed as well. */
const RECHECK_CHOICES = [15, 30, 60, 120, 240, 480, 720, 1440, 10080, 0];

function recheckChoices(current: number): number[] {
  if (RECHECK_CHOICES.includes(current)) return RECHECK_CHOICES;
  return [...RECHECK_CHOICES.slice(0, -1).concat(current).sort((a, b) => a - b), 0];
}

function recheckLabel(minutes: number): string {
  if (minutes === 0) return 'Never';
  const suffix = minutes === RECHECK_MINUTES.default ? ' (recommended)' : '';
  if (minutes === 10080) return `Every 7 days${suffix}`;
  if (minutes % 1440 === 0) return `${minutes === 1440 ? 'Every day' : `Every ${minutes / 1440} days`}${suffix}`;
  if (minutes % 60 === 0) return `${minutes === 60 ? 'Every hour' : `Every ${minutes / 60} hours`}${suffix}`;
  if (minutes < 60) return `Every ${minutes} minutes${suffix}`;
  return `Every ${Math.floor(minutes / 60)} h ${minutes % 60} min${suffix}`;
}
