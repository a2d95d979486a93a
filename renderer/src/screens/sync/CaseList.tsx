import { useState } from 'react';
import type { CaseView } from '../../../../shared/bridge.js';
import { Icon } from '../../components/Icon.js';
import { MiddleName } from '../../components/MiddleName.js';
import { ProgressBar } from '../../components/ProgressBar.js';
import { formatBytes, formatCount } from '../../format.js';

type CaseStatus = 'failed' | 'active' | 'finished';

function statusOf(entry: CaseView): CaseStatus {
  if (entry.counts.failed > 0) return 'failed';
  const files = Object.values(entry.counts).reduce((sum, count) => sum + count, 0);
  return entry.counts.synced === files ? 'finished' : 'active';
}

const STATUS_ORDER: Record<CaseStatus, number> = { failed: 0, active: 1, finished: 2 };

/**
 * A case is one scanner export (the first folder level); staff think in cases, not files. The
 * cases that need someone come first, then those still uploading; the finished ones are folded
 * under one line, so a failure never sits screens below a long list of done cases.
 */
export function CaseList({ cases, folder }: { cases: CaseView[]; folder: string }) {
  const [showFinished, setShowFinished] = useState(false);
  const ordered = [...cases].sort((a, b) => STATUS_ORDER[statusOf(a)] - STATUS_ORDER[statusOf(b)] || a.path.localeCompare(b.path, undefined, { numeric: true }));
  const open = ordered.filter((entry) => statusOf(entry) !== 'finished');
  const finished = ordered.filter((entry) => statusOf(entry) === 'finished');
  const listId = `finished-cases-${folder.replace(/\W+/g, '-')}`;
  return (
    <section className="case-list">
      <h3 className="section-label">Cases</h3>
      {open.length > 0 ? (
        <ul>
          {open.map((entry) => (
            <CaseRow key={entry.path} entry={entry} />
          ))}
        </ul>
      ) : null}
      {finished.length > 0 ? (
        <>
          <button type="button" className="disclosure case-fold" aria-expanded={showFinished} aria-controls={listId} onClick={() => setShowFinished(!showFinished)}>
            <Icon name={showFinished ? 'chevronDown' : 'chevronRight'} size={16} />
            {finished.length === 1 ? 'One finished case' : `${formatCount(finished.length)} finished cases`}
          </button>
          {showFinished ? (
            <ul id={listId}>
              {finished.map((entry) => (
                <CaseRow key={entry.path} entry={entry} />
              ))}
            </ul>
          ) : null}
        </>
      ) : null}
    </section>
  );
}

function CaseRow({ entry }: { entry: CaseView }) {
  const status = statusOf(entry);
  const tone = status === 'failed' ? 'danger' : status === 'finished' ? 'success' : 'progress';
  const { done, total } = entry.items;
  const files = Object.values(entry.counts).reduce((sum, count) => sum + count, 0);
  const noun = total === files ? (total === 1 ? 'file' : 'files') : total === 1 ? 'item' : 'items';
  return (
    <li className="case-row" data-case-status={status}>
      <span className="case-name">
        <Icon name={status === 'finished' ? 'checkCircle' : status === 'failed' ? 'alert' : 'folder'} size={16} className={`tone-text-${tone}`} />
        {entry.path === '/' || entry.path === '' ? <span className="truncate">Top of the folder</span> : <MiddleName name={entry.path} />}
      </span>
      <ProgressBar done={done} total={total || 1} tone={tone} size="thin" label={`Case ${entry.path} progress`} />
      <span className="case-meta muted small">
        {formatCount(done)} of {formatCount(total)} {noun} · {formatBytes(entry.bytesTotal)}
        {entry.counts.failed > 0 ? <span className="tone-text-danger"> · {formatCount(entry.counts.failed)} failed</span> : null}
        {entry.skipped > 0 ? <span> · {formatCount(entry.skipped)} empty, skipped</span> : null}
      </span>
    </li>
  );
}
