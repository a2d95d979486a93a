import { useMemo, useState } from 'react';
import { flushSync } from 'react-dom';
import type { FileState, FileView } from '../../../../shared/bridge.js';
import { visibleName } from '../../../../shared/names.js';
import { useBridgeEvent, useBridgeQuery } from '../../bridge/context.js';
import { Icon } from '../../components/Icon.js';
import { ProgressBar } from '../../components/ProgressBar.js';
import { FileStateBadge, fileStateTone } from '../../components/StateBadge.js';
import { VirtualList } from '../../components/VirtualList.js';
import { formatBytes, formatDateTime, formatDuration, formatRate } from '../../format.js';
import { fileIcon } from '../../documents/file-types.js';
import { failureHint } from '../../documents/failure-hints.js';
import { detailLabel } from '../../bridge/errors.js';

interface FilePage {
  files: FileView[];
  total: number;
}

const FILE_LIMIT = 1000;
const ROW_HEIGHT = 64;
const VISIBLE_ROWS = 7;

/** Failures first (they need a person), then what is moving, then what is done. */
const STATE_ORDER: Record<FileState, number> = { failed: 0, uploading: 1, creating: 2, verifying: 3, waiting: 4, queued: 5, synced: 6 };

export function PairFiles({ pairId, label, onRetry }: { pairId: string; label: string; onRetry: (fileId: number) => void }) {
  const files = useBridgeQuery((client) => client.listFiles({ pairId, limit: FILE_LIMIT }), [pairId]);
  const [expanded, setExpanded] = useState(true);
  useBridgeEvent((event) => {
    if (event.type !== 'files' || event.pairId !== pairId) return;
    const apply = () => files.setData((current) => (current ? mergeFiles(current, event.files) : current));
    // A file entering a new state is committed to the screen now, not batched with the next event:
    // a small file passes queued → uploading → verifying → synced within a few milliseconds, and
    // each state is something staff should see. Byte progress updates batch as usual.
    const known = files.data ? new Map(files.data.files.map((file) => [file.id, file.state])) : null;
    if (known && event.files.some((file) => known.get(file.id) !== file.state)) flushSync(apply);
    else apply();
  });
  const ordered = useMemo(
    () => [...(files.data?.files ?? [])].sort((a, b) => STATE_ORDER[a.state] - STATE_ORDER[b.state] || (b.syncedAt ?? b.updatedAt) - (a.syncedAt ?? a.updatedAt) || a.relativePath.localeCompare(b.relativePath)),
    [files.data],
  );
  if (!files.data || files.data.files.length === 0) return null;
  return (
    <div className="pair-files">
      <button type="button" className="disclosure" aria-expanded={expanded} onClick={() => setExpanded(!expanded)}>
        <Icon name={expanded ? 'chevronDown' : 'chevronRight'} size={16} />
        Files ({files.data.total})
      </button>
      {expanded ? (
        <VirtualList
          items={ordered}
          rowHeight={ROW_HEIGHT}
          label={`Files of ${label}`}
          getKey={(file) => file.id}
          renderRow={(file) => <FileRow file={file} onRetry={onRetry} />}
          className="file-rows"
          kind="list"
          style={{ height: Math.min(ordered.length, VISIBLE_ROWS) * ROW_HEIGHT + 2 }}
        />
      ) : null}
    </div>
  );
}

/** The list with the files of an event put in (replacing the same file, adding a new one). */
function mergeFiles(current: FilePage, changed: readonly FileView[]): FilePage {
  const byId = new Map(current.files.map((file) => [file.id, file]));
  let added = 0;
  for (const file of changed) {
    if (!byId.has(file.id)) added += 1;
    byId.set(file.id, file);
  }
  return { files: [...byId.values()], total: current.total + added };
}

function FileRow({ file, onRetry }: { file: FileView; onRetry: (fileId: number) => void }) {
  const moving = file.state === 'uploading' || file.state === 'creating';
  return (
    <div className={`file-row state-${file.state}`} data-file={file.relativePath} data-state={file.state}>
      <span className="file-row-icon">
        <Icon name={fileIcon(file.fileName)} size={20} />
      </span>
      <span className="file-row-name">
        <span className="truncate strong" title={visibleName(file.relativePath)}>
          {visibleName(file.fileName)}
        </span>
        {file.state === 'failed' && file.error ? <FailureText file={file} /> : <span className="truncate muted small">To {file.remotePath === '/' ? 'the top of the record' : file.remotePath}</span>}
      </span>
      <span className="file-row-progress">
        {moving || file.state === 'verifying' ? (
          <>
            <ProgressBar done={file.bytesDone} total={file.size || 1} tone={fileStateTone(file.state)} size="thin" label={`${visibleName(file.fileName)} upload progress`} />
            <span className="muted small">
              {formatBytes(file.bytesDone)} of {formatBytes(file.size)}
              {file.rate > 0 ? ` · ${formatRate(file.rate)} · about ${formatDuration((file.size - file.bytesDone) / file.rate)} left` : ''}
            </span>
          </>
        ) : (
          <span className="muted small">
            {formatBytes(file.size)}
            {file.syncedAt ? ` · ${formatDateTime(file.syncedAt)}` : ''}
            {file.state === 'waiting' && file.nextAttemptAt ? ` · ${nextTry(file.nextAttemptAt)}` : ''}
          </span>
        )}
      </span>
      <FileStateBadge state={file.state} />
      <span className="file-row-action">
        {file.state === 'failed' || file.state === 'waiting' ? (
          <button
            type="button"
            className="button small"
            onClick={(event) => {
              // The button leaves with the failed or waiting state: the focus moves to the list around
              // it rather than to nowhere (a keyboard user would start again from the top of the page).
              event.currentTarget.closest<HTMLElement>('[role="list"]')?.focus();
              onRetry(file.id);
            }}
            aria-label={`${file.state === 'failed' ? 'Retry' : 'Try now'} ${visibleName(file.fileName)}`}
          >
            <Icon name="retry" size={14} /> {file.state === 'failed' ? 'Retry' : 'Try now'}
          </button>
        ) : null}
      </span>
    </div>
  );
}

/** The reason in one line; the whole of it (and what to do) in the tooltip, since the line may be cut. */
function FailureText({ file }: { file: FileView }) {
  const error = file.error!;
  const hint = failureHint(error.code);
  const label = error.detail ? detailLabel(error) : null;
  const whole = [error.message, hint, label ? `${label} ${error.detail}` : null].filter(Boolean).join(' ');
  return (
    <span className="truncate muted small" title={whole}>
      <span className="tone-text-danger">
        {error.message}
        {hint ? ` ${hint}` : ''}
        {label ? ` ${label} ${error.detail}` : ''}
      </span>
    </span>
  );
}

/** A retry seconds or minutes away is said as such; a far one by its date. */
function nextTry(at: number, now = Date.now()): string {
  const seconds = Math.round((at - now) / 1000);
  if (seconds <= 1) return 'trying again now';
  if (seconds < 3600) return `next try in ${formatDuration(seconds)}`;
  return `next try ${formatDateTime(at)}`;
}
