import { MiddleName } from '../../components/MiddleName.js';
import { useState } from 'react';
import type { HistoryFileView } from '../../../../shared/bridge.js';
import { visibleName } from '../../../../shared/names.js';
import { useBridgeQuery } from '../../bridge/context.js';
import { EmptyState } from '../../components/EmptyState.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { FileStateBadge } from '../../components/StateBadge.js';
import { foundMissingAt } from '../../documents/failure-hints.js';
import { formatBytes, formatDateTime } from '../../format.js';

const HISTORY_LIMIT = 5000;

/** Every synced file and, for the one chosen, each step it went through (when, which version, verified). */
export function SyncHistory() {
  // The whole record, also of folders no longer synced ("Stop syncing" keeps what was uploaded).
  const files = useBridgeQuery((client) => client.historyFiles(HISTORY_LIMIT), []);
  const [selected, setSelected] = useState<HistoryFileView | null>(null);
  if (files.error) return <ErrorNotice error={files.error} />;
  if (files.data && files.data.length === 0) {
    return (
      <EmptyState icon="clock" title="No uploads yet">
        Each file a synced folder uploads is recorded here, with when it was verified on the server.
      </EmptyState>
    );
  }
  return (
    <div className="history-layout">
      {/* Its own column, scrolling sideways if the table cannot fit: never under the file's history beside it. */}
      <div className="history-table">
        <table className="data-table" aria-label="Synced files">
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">From folder</th>
              <th scope="col">State</th>
              <th scope="col">Size</th>
              <th scope="col">Version</th>
              <th scope="col">Verified</th>
            </tr>
          </thead>
          <tbody>
            {files.data?.map((file) => (
              <tr key={file.id} className={selected?.id === file.id ? 'selected' : undefined}>
                <td>
                  <button type="button" className="link-button" onClick={() => setSelected(file)} aria-pressed={selected?.id === file.id}>
                    {visibleName(file.relativePath)}
                  </button>
                </td>
                <td className="history-folder">
                  {/* One line, cut in the middle (the folder's own name stays), the whole path on hover; the patient below. */}
                  <MiddleName name={file.folder} plain />
                  <span className="muted small history-folder-patient">
                    {file.patientName ? ` to ${visibleName(file.patientName)}` : ''}
                    {file.pairRemoved ? ' · no longer synced' : ''}
                  </span>
                </td>
                <td>
                  <FileStateBadge state={file.state} />
                </td>
                <td className="tabular nowrap">{formatBytes(file.size)}</td>
                <td className="tabular">{file.version ?? '—'}</td>
                <td className="tabular nowrap" data-column="verified">
                  <VerifiedCell file={file} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {selected ? <FileTimeline file={selected} /> : null}
    </div>
  );
}

/** When the file was verified; for a scan no longer on the server, when that was found (its old date would read as if it were fine). */
function VerifiedCell({ file }: { file: HistoryFileView }) {
  const missing = foundMissingAt(file);
  return missing === null ? <>{formatDateTime(file.syncedAt)}</> : <>Found missing {formatDateTime(missing)}</>;
}

function FileTimeline({ file }: { file: HistoryFileView }) {
  const history = useBridgeQuery((client) => client.fileHistory(file.id), [file.id]);
  return (
    <section className="card timeline" aria-label={`History of ${file.fileName}`}>
      <h2 className="timeline-title">{visibleName(file.fileName)}</h2>
      {history.error ? <ErrorNotice error={history.error} /> : null}
      <ol className="timeline-list">
        {history.data?.map((entry, index) => (
          <li key={`${entry.at}-${index}`}>
            <span className="timeline-dot" aria-hidden="true" />
            <div>
              <div className="strong" data-event={entry.event}>
                {eventLabel(entry.event)}
              </div>
              <div className="muted small">
                {formatDateTime(entry.at)}
                {entry.version !== null ? ` · version ${entry.version}` : ''}
              </div>
              {entry.detail ? <div className="small">{entry.detail}</div> : null}
              {entry.sha256 ? <div className="mono small muted break">SHA-256 {entry.sha256}</div> : null}
            </div>
          </li>
        ))}
      </ol>
    </section>
  );
}

/** The journal's history events (electron/sync/journal/states.ts) in the words staff read; the CSV export keeps the names. */
const EVENT_LABELS: Record<string, string> = {
  queued: 'Waiting to upload',
  uploaded: 'Uploaded',
  version: 'Uploaded as a new version',
  verified: 'Verified on the server',
  failed: 'Needs attention',
  adopted: 'Matched to a document already on the server',
  'deleted-locally': 'Deleted from the folder',
  ignored: 'Ignored (an ignore pattern covers it)',
};

function eventLabel(event: string): string {
  return EVENT_LABELS[event] ?? event;
}
