import { useState, type FormEvent } from 'react';
import type { PairView } from '../../../../shared/bridge.js';
import type { PatientDto } from '../../../../shared/schemas.js';
import { useBridge, useBridgeKind } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { Dialog } from '../../components/Dialog.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { PatientList } from '../../components/PatientList.js';

export function AddPairDialog({ open, onClose, onAdded }: { open: boolean; onClose: () => void; onAdded: (pair: PairView) => void }) {
  return (
    <Dialog title="Sync a folder" open={open} onClose={onClose} wide>
      <AddPairForm onAdded={onAdded} onCancel={onClose} />
    </Dialog>
  );
}

function AddPairForm({ onAdded, onCancel }: { onAdded: (pair: PairView) => void; onCancel: () => void }) {
  const client = useBridge();
  const kind = useBridgeKind();
  const [patient, setPatient] = useState<PatientDto | null>(null);
  const [folder, setFolder] = useState('');
  const [remoteBasePath, setRemoteBasePath] = useState('/');
  const [error, setError] = useState<BridgeError | null>(null);
  const [saving, setSaving] = useState(false);

  const chooseFolder = async () => {
    try {
      const chosen = await client.chooseFolder();
      if (chosen) setFolder(chosen);
    } catch (failure) {
      setError(toBridgeError(failure));
    }
  };
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!patient || saving) return;
    setSaving(true);
    setError(null);
    try {
      onAdded(await client.addPair({ folder: folder.trim(), patientId: patient.id, patientName: patient.name, remoteBasePath: remoteBasePath.trim() || '/' }));
    } catch (failure) {
      setError(toBridgeError(failure));
    } finally {
      setSaving(false);
    }
  };

  return (
    <form className="form add-pair-form" onSubmit={(event) => void submit(event)}>
      <div className="form-step">
        <h3 className="form-step-title">
          <span className="step-number">1</span> Patient
        </h3>
        <PatientList selectedId={patient?.id ?? null} onSelect={setPatient} label="Search patients by name" compact autoFocus />
      </div>
      <div className="form-step">
        <h3 className="form-step-title">
          <span className="step-number">2</span> Folder on this computer
        </h3>
        <div className="field">
          <label htmlFor="pair-folder">Scan folder</label>
          <div className="input-with-button">
            <input id="pair-folder" value={folder} onChange={(event) => setFolder(event.target.value)} placeholder={kind === 'desktop' ? 'Choose the folder your scanner exports into' : 'Type the full path, e.g. /home/clinic/scans'} required spellCheck={false} />
            {kind === 'desktop' ? (
              <button type="button" className="button" onClick={() => void chooseFolder()}>
                <Icon name="folderOpen" size={16} /> Choose…
              </button>
            ) : null}
          </div>
          {kind !== 'desktop' ? <span className="field-hint">In browser mode, type the folder’s full path on the computer running Patient Docs.</span> : null}
        </div>
        <div className="field">
          <label htmlFor="pair-remote-path">Folder in the patient’s record</label>
          <input id="pair-remote-path" value={remoteBasePath} onChange={(event) => setRemoteBasePath(event.target.value)} placeholder="/scans" spellCheck={false} />
          <span className="field-hint">Sub-folders keep their names below this folder. “/” puts files at the top of the record.</span>
        </div>
      </div>
      {error ? <ErrorNotice error={error} title="The folder cannot be added" /> : null}
      <div className="form-actions">
        <button type="button" className="button quiet" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="button primary" disabled={!patient || !folder.trim()} aria-disabled={saving}>
          <Icon name="sync" size={16} /> {patient ? `Sync to ${patient.name}` : 'Choose a patient first'}
        </button>
      </div>
    </form>
  );
}
