import type { CaseView } from '../../../../shared/bridge.js';
import { Icon } from '../../components/Icon.js';
import { ProgressBar } from '../../components/ProgressBar.js';
import { formatBytes, formatCount } from '../../format.js';

/** A case is one scanner export (the first folder level); staff think in cases, not files. */
export function CaseList({ cases }: { cases: CaseView[] }) {
  return (
    <section className="case-list">
      <h3 className="section-label">Cases</h3>
      <ul>
        {cases.map((entry) => {
          const files = Object.values(entry.counts).reduce((sum, count) => sum + count, 0);
          const finished = entry.counts.synced === files;
          const tone = entry.counts.failed > 0 ? 'danger' : finished ? 'success' : 'progress';
          return (
            <li key={entry.path} className="case-row">
              <span className="case-name">
                <Icon name={finished ? 'checkCircle' : 'folder'} size={16} className={`tone-text-${tone}`} />
                <span className="truncate">{entry.path === '/' || entry.path === '' ? 'Top of the folder' : entry.path}</span>
              </span>
              <ProgressBar done={entry.bytesDone} total={entry.bytesTotal || 1} tone={tone} size="thin" label={`Case ${entry.path} progress`} />
              <span className="case-meta muted small">
                {formatCount(entry.counts.synced)} of {formatCount(files)} files · {formatBytes(entry.bytesTotal)}
                {entry.counts.failed > 0 ? <span className="tone-text-danger"> · {formatCount(entry.counts.failed)} failed</span> : null}
              </span>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
