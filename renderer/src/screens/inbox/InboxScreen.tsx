import { useState } from 'react';
import type { CaseSuggestionView, InboxCaseView } from '../../../../shared/bridge.js';
import { visibleName } from '../../../../shared/names.js';
import type { PatientDto } from '../../../../shared/schemas.js';
import { useBridge, useBridgeEvent, useBridgeQuery } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { Dialog } from '../../components/Dialog.js';
import { EmptyState } from '../../components/EmptyState.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon, type IconName } from '../../components/Icon.js';
import { PatientList } from '../../components/PatientList.js';
import { formatBytes, formatDateTime, formatFileCount } from '../../format.js';

const STATE_LOOK: Record<InboxCaseView['state'], { label: string; icon: IconName; tone: string }> = {
  'needs-patient': { label: 'Needs a patient', icon: 'clock', tone: 'warning' },
  conflict: { label: 'Conflict', icon: 'alert', tone: 'danger' },
  assigned: { label: 'Syncing', icon: 'sync', tone: 'progress' },
  synced: { label: 'Synced', icon: 'checkCircle', tone: 'success' },
};

/**
 * The scanner inbox: every case the scanners exported, newest first. A case goes to a patient on
 * its own only when a chart number or patient id says who it is; the others wait here for staff,
 * with what the case says and the patients it most likely belongs to.
 */
export function InboxScreen() {
  const cases = useBridgeQuery((client) => client.listCases(), []);
  const [chosen, setChosen] = useState<InboxCaseView | null>(null);
  useBridgeEvent((event) => {
    if (event.type === 'cases' || event.type === 'pairs') void cases.reload();
  });
  const waiting = (cases.data ?? []).filter((item) => item.state === 'needs-patient' || item.state === 'conflict').length;
  return (
    <div className="screen">
      <header className="screen-header">
        <div>
          <h1>Inbox</h1>
          <p className="screen-subtitle">
            Cases the scanners exported. A case is filed on its own only when its chart number or patient id names one patient; {waiting === 0 ? 'none waits for you now.' : waiting === 1 ? 'one case waits for you to confirm the patient.' : `${waiting} cases wait for you to confirm the patient.`}
          </p>
        </div>
      </header>
      {cases.error ? <ErrorNotice error={cases.error} /> : null}
      {cases.data && cases.data.length === 0 ? (
        <EmptyState icon="folder" title="No cases yet">
          Each folder or file a scanner writes into the inbox folder appears here. Add an inbox with <code>patient-docs-sync add-inbox</code>.
        </EmptyState>
      ) : null}
      {cases.data && cases.data.length > 0 ? (
        <ul className="inbox-cases" aria-label="Cases">
          {cases.data.map((item) => (
            <CaseRow key={`${item.inboxId}/${item.name}`} item={item} onChoose={() => setChosen(item)} />
          ))}
        </ul>
      ) : null}
      <Dialog title={chosen ? `Patient for ${visibleName(chosen.name)}` : 'Patient'} open={chosen !== null} onClose={() => setChosen(null)} wide>
        {chosen ? (
          <PatientPicker
            item={chosen}
            onAssigned={(next) => {
              setChosen(null);
              cases.setData((cases.data ?? []).map((item) => (item.inboxId === next.inboxId && item.name === next.name ? next : item)));
            }}
          />
        ) : null}
      </Dialog>
    </div>
  );
}

function CaseRow({ item, onChoose }: { item: InboxCaseView; onChoose: () => void }) {
  const look = STATE_LOOK[item.state];
  const canChoose = item.state === 'needs-patient' || item.state === 'conflict' || (item.state === 'assigned' && item.filesSynced === 0);
  return (
    <li className={`inbox-case state-${item.state}`} data-case={item.name} data-state={item.state}>
      <div className="inbox-case-head">
        <span className={`badge tone-${look.tone}`}>
          <Icon name={look.icon} size={14} />
          {look.label}
        </span>
        <h2 className="inbox-case-name">{visibleName(item.name)}</h2>
        <span className="muted small">
          {[item.scanner, formatFileCount(item.fileCount), formatBytes(item.bytes), `found ${formatDateTime(item.firstSeenAt)}`].filter(Boolean).join(' · ')}
        </span>
      </div>
      {item.patientId ? (
        <p className="inbox-case-patient">
          To <strong>{visibleName(item.patientName ?? item.patientId)}</strong>
          <span className="muted small">
            {' '}
            · {item.assignedHow === 'automatic' ? 'filed automatically' : 'confirmed'} by {item.assignedBy} {formatDateTime(item.assignedAt)}
            {item.state === 'assigned' ? ` · ${item.filesSynced} of ${Math.max(item.filesKnown, item.fileCount)} files synced` : ''}
          </span>
        </p>
      ) : null}
      {item.reason ? <p className={item.state === 'conflict' ? 'inbox-case-reason danger' : 'inbox-case-reason'}>{item.reason}</p> : null}
      {item.evidence.length > 0 ? (
        <ul className="inbox-evidence" aria-label={`What ${item.name} says`}>
          {item.evidence.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      ) : null}
      {canChoose ? (
        <button type="button" className={item.patientId ? 'button' : 'button primary'} onClick={onChoose}>
          <Icon name="patients" size={16} /> {item.patientId ? 'Change patient' : 'Choose patient'}
          <span className="visually-hidden"> for {item.name}</span>
        </button>
      ) : null}
    </li>
  );
}

/** The suggestions first (likeliest on top, with why), then a search of every patient the clinic may see. */
function PatientPicker({ item, onAssigned }: { item: InboxCaseView; onAssigned: (next: InboxCaseView) => void }) {
  const client = useBridge();
  const [picked, setPicked] = useState<{ id: string; name: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<BridgeError | null>(null);
  const assign = async () => {
    if (!picked) return;
    setBusy(true);
    setError(null);
    try {
      onAssigned(await client.assignCase({ inboxId: item.inboxId, caseName: item.name, patientId: picked.id }));
    } catch (failure) {
      setError(toBridgeError(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="patient-picker">
      {item.reason ? <p className={item.state === 'conflict' ? 'inbox-case-reason danger' : 'inbox-case-reason'}>{item.reason}</p> : null}
      {item.suggestions.length > 0 ? (
        <section aria-labelledby="suggested-heading">
          <h3 id="suggested-heading">Suggested</h3>
          <ul className="inbox-suggestions">
            {item.suggestions.map((suggestion, index) => (
              <li key={suggestion.patientId}>
                <SuggestionButton suggestion={suggestion} selected={picked?.id === suggestion.patientId} autoFocus={index === 0} onPick={() => setPicked({ id: suggestion.patientId, name: suggestion.name })} />
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <section aria-labelledby="find-heading">
        <h3 id="find-heading">Find another patient</h3>
        <PatientList compact selectedId={picked?.id ?? null} onSelect={(patient: PatientDto) => setPicked({ id: patient.id, name: patient.name })} label="Name, chart number or birth date" autoFocus={item.suggestions.length === 0} />
      </section>
      {error ? <ErrorNotice error={error} title="The case was not assigned" /> : null}
      <div className="form-actions">
        <button type="button" className="button primary" disabled={!picked || busy} onClick={() => void assign()}>
          {picked ? `File ${item.name} under ${visibleName(picked.name)}` : 'Choose a patient first'}
        </button>
      </div>
    </div>
  );
}

function SuggestionButton({ suggestion, selected, autoFocus, onPick }: { suggestion: CaseSuggestionView; selected: boolean; autoFocus: boolean; onPick: () => void }) {
  const details = [suggestion.chart ? `chart ${suggestion.chart}` : null, suggestion.birthDate ? `born ${suggestion.birthDate}` : null].filter(Boolean).join(' · ');
  return (
    <button type="button" className={selected ? 'suggestion selected' : 'suggestion'} aria-pressed={selected} onClick={onPick} data-autofocus={autoFocus ? '' : undefined} data-patient-id={suggestion.patientId}>
      <span className="suggestion-name">{visibleName(suggestion.name)}</span>
      {details ? <span className="muted small"> {details}</span> : null}
      <span className="suggestion-because small">{suggestion.because.join('; ')}</span>
    </button>
  );
}
