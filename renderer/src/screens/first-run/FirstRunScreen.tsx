import { useState } from 'react';
import type { AppStatus } from '../../../../shared/bridge.js';
import { useBridge } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { RemoteServerForm } from './RemoteServerForm.js';

type Choice = 'embedded' | 'remote' | null;

/** The first thing a new user sees: two plain choices, nothing technical until they ask for it. */
export function FirstRunScreen({ onConfigured }: { onConfigured: (status: AppStatus) => void }) {
  const [choice, setChoice] = useState<Choice>(null);
  return (
    <main className="first-run">
      <div className="first-run-card">
        <header className="first-run-header">
          <span className="brand-mark brand-mark-large">
            <Icon name="logo" size={30} />
          </span>
          <h1>Welcome to Patient Docs</h1>
          <p>Patient Docs copies the files your scanners export into each patient’s record, and checks that every file arrived complete.</p>
        </header>
        <fieldset className="choice-group">
          <legend>Where are the patient records kept?</legend>
          <ChoiceCard
            selected={choice === 'embedded'}
            onSelect={() => setChoice('embedded')}
            icon="computer"
            title="This computer runs the server"
            description="Start the bundled server here, with a demo clinic, patient and scanner client. Then add a scan folder for the demo patient to try a folder sync."
          />
          <ChoiceCard
            selected={choice === 'remote'}
            onSelect={() => setChoice('remote')}
            icon="server"
            title="Connect to a server"
            description="Use your clinic’s Patient Docs server. You need the server address and client details from your IT contact."
          />
        </fieldset>
        {choice === 'embedded' ? <EmbeddedSetup onConfigured={onConfigured} /> : null}
        {choice === 'remote' ? <RemoteServerForm onConfigured={onConfigured} /> : null}
      </div>
    </main>
  );
}

function ChoiceCard({ selected, onSelect, icon, title, description }: { selected: boolean; onSelect: () => void; icon: 'computer' | 'server'; title: string; description: string }) {
  return (
    <label className={selected ? 'choice-card selected' : 'choice-card'}>
      <input type="radio" name="setup-choice" checked={selected} onChange={onSelect} className="visually-hidden" />
      <span className="choice-icon">
        <Icon name={icon} size={26} />
      </span>
      <span className="choice-text">
        <span className="choice-title">{title}</span>
        <span className="choice-description">{description}</span>
      </span>
      <span className="choice-check" aria-hidden="true">
        {selected ? <Icon name="check" size={16} /> : null}
      </span>
    </label>
  );
}

function EmbeddedSetup({ onConfigured }: { onConfigured: (status: AppStatus) => void }) {
  const client = useBridge();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<BridgeError | null>(null);
  const start = async () => {
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      onConfigured(await client.setupEmbedded());
    } catch (failure) {
      setError(toBridgeError(failure));
      setBusy(false);
    }
  };
  return (
    <section className="setup-panel" aria-label="Run the server on this computer">
      <ul className="check-list">
        <li>
          <Icon name="check" size={16} /> Patient records stay on this computer, in its data folder.
        </li>
        <li>
          <Icon name="check" size={16} /> A demo clinic, patient and scanner client are created for you.
        </li>
        <li>
          <Icon name="check" size={16} /> To move to your clinic’s server later, IT connects this computer to it (<code>patient-docs-sync connect</code>); Settings shows the connection.
        </li>
      </ul>
      {error ? <ErrorNotice error={error} title="The server could not start" /> : null}
      <div className="form-actions">
        <button type="button" className="button primary" onClick={() => void start()} aria-disabled={busy}>
          {busy ? <span className="spinner spinner-small" aria-hidden="true" /> : <Icon name="play" size={16} />}
          {busy ? 'Starting the server…' : 'Start the server here'}
        </button>
      </div>
    </section>
  );
}
