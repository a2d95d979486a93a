import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { flushSync } from 'react-dom';
import type { FileState, FileView } from '../../../../shared/bridge.js';
import { visibleName } from '../../../../shared/names.js';
import { isSkipped } from '../../../../shared/file-states.js';
import { useBridgeEvent, useBridgeQuery } from '../../bridge/context.js';
import { Icon } from '../../components/Icon.js';
import { MiddleName } from '../../components/MiddleName.js';
import { ProgressBar } from '../../components/ProgressBar.js';
import { FileStateBadge, fileStateTone } from '../../components/StateBadge.js';
import { VirtualList } from '../../components/VirtualList.js';
import { formatBytes, formatDateTime, formatDuration, formatRate } from '../../format.js';
import { fileIcon } from '../../documents/file-types.js';
import { canRetry, failureHint, foundMissingAt, isNoLongerOnServer } from '../../documents/failure-hints.js';
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

/** Where a file sorts: by its state, a skipped (empty) file just before the synced ones (seen, but after what needs someone). */
function rank(file: FileView): number {
  return isSkipped(file.state, file.error?.code) ? 5.5 : STATE_ORDER[file.state];
}

export function PairFiles({ pairId, label, onRetry }: { pairId: string; label: string; onRetry: (fileId: number) => void }) {
  const files = useBridgeQuery((client) => client.listFiles({ pairId, limit: FILE_LIMIT }), [pairId]);
  const [expanded, setExpanded] = useState(true);
  // The one failed file whose whole reason is shown under the list ("Details" on its row).
  const [reasonOf, setReasonOf] = useState<number | null>(null);
  const reasonId = `reason-${pairId}`;
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
    () => [...(files.data?.files ?? [])].sort((a, b) => rank(a) - rank(b) || (b.syncedAt ?? b.updatedAt) - (a.syncedAt ?? a.updatedAt) || a.relativePath.localeCompare(b.relativePath)),
    [files.data],
  );
  const shownReason = reasonOf === null ? undefined : ordered.find((file) => file.id === reasonOf && file.state === 'failed' && file.error);
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
          renderRow={(file) => (
            <FileRow
              file={file}
              onRetry={onRetry}
              reason={{ id: reasonId, open: shownReason?.id === file.id, onToggle: () => setReasonOf(shownReason?.id === file.id ? null : file.id) }}
            />
          )}
          className="file-rows"
          kind="list"
          style={{ height: Math.min(ordered.length, VISIBLE_ROWS) * ROW_HEIGHT + 2 }}
        />
      ) : null}
      {expanded && shownReason ? <WholeReason id={reasonId} file={shownReason} onHide={() => setReasonOf(null)} /> : null}
    </div>
  );
}

/**
 * The list with the files of an event put in (replacing the same file, adding a new one). A row the
 * list holds from a later change of its file stays: an event told while the list was being read
 * comes to it a second time, with the list's answer, and may be the older of the two.
 */
function mergeFiles(current: FilePage, changed: readonly FileView[]): FilePage {
  const byId = new Map(current.files.map((file) => [file.id, file]));
  let added = 0;
  for (const file of changed) {
    const held = byId.get(file.id);
    if (!held) added += 1;
    else if (held.updatedAt > file.updatedAt) continue;
    byId.set(file.id, file);
  }
  return { files: [...byId.values()], total: current.total + added };
}

interface ReasonToggle {
  /** The id of the panel that shows the whole reason. */
  id: string;
  open: boolean;
  onToggle: () => void;
}

function FileRow({ file, onRetry, reason }: { file: FileView; onRetry: (fileId: number) => void; reason: ReasonToggle }) {
  const moving = file.state === 'uploading' || file.state === 'creating';
  if (isSkipped(file.state, file.error?.code)) return <SkippedRow file={file} />;
  return (
    <div className={`file-row state-${file.state}`} data-file={file.relativePath} data-state={file.state}>
      <span className="file-row-icon">
        <Icon name={fileIcon(file.fileName)} size={20} />
      </span>
      <span className="file-row-name">
        <MiddleName name={file.fileName} className="strong" />
        {file.state === 'failed' && file.error ? <FailureText file={file} toggle={reason} /> : <span className="truncate muted small">To {file.remotePath === '/' ? 'the top of the record' : file.remotePath}</span>}
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
            {whenText(file)}
            {file.state === 'waiting' && file.nextAttemptAt ? ` · ${nextTry(file.nextAttemptAt)}` : ''}
          </span>
        )}
      </span>
      <FileStateBadge state={file.state} />
      <span className="file-row-action">
        {/* No Retry for a scan in neither the server nor the folder: nothing to upload; a copy put back goes by itself. */}
        {(file.state === 'failed' && (!file.error || canRetry(file.error.code))) || file.state === 'waiting' ? (
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

/** A file set aside that needs no one (an empty file): neutral, its reason in a line, no Retry. */
function SkippedRow({ file }: { file: FileView }) {
  return (
    <div className="file-row state-skipped" data-file={file.relativePath} data-state="skipped">
      <span className="file-row-icon">
        <Icon name={fileIcon(file.fileName)} size={20} />
      </span>
      <span className="file-row-name">
        <MiddleName name={file.fileName} className="strong" />
        <span className="truncate muted small">Empty file (0 bytes): uploaded once it has content</span>
      </span>
      <span className="file-row-progress">
        <span className="muted small">{formatBytes(file.size)}</span>
      </span>
      <span className="badge tone-neutral" data-state="skipped">
        <Icon name="clock" size={14} />
        Skipped
      </span>
      <span className="file-row-action" />
    </div>
  );
}

/** A failed file's reason, message, what to do and the detail for IT, in one string. */
function wholeReason(error: NonNullable<FileView['error']>): { message: string; hint: string | null; detail: string | null } {
  const label = error.detail ? detailLabel(error) : null;
  return { message: error.message, hint: failureHint(error.code), detail: label ? `${label} ${error.detail}` : null };
}

/**
 * The reason in one line (the row keeps its height: the list is virtualised, and stays quick to scan),
 * and a "Details" button that shows the whole of it under the list — for the keyboard and touch, which
 * a tooltip does not reach.
 */
function FailureText({ file, toggle }: { file: FileView; toggle: ReasonToggle }) {
  const { message, hint, detail } = wholeReason(file.error!);
  const whole = [message, hint, detail].filter(Boolean).join(' ');
  return (
    <span className="file-row-reason small">
      <span className="truncate tone-text-danger" title={whole}>
        {whole}
      </span>
      <button
        type="button"
        className="link-button reason-toggle"
        aria-expanded={toggle.open}
        aria-controls={toggle.open ? toggle.id : undefined}
        aria-label={`Details of ${visibleName(file.fileName)}`}
        data-reason-of={file.id}
        onClick={toggle.onToggle}
      >
        Details
      </button>
    </span>
  );
}

/** The whole reason of one failed file, under the list; it takes the focus when opened and gives it back to its "Details" on Hide. */
function WholeReason({ id, file, onHide }: { id: string; file: FileView; onHide: () => void }) {
  const { message, hint, detail } = wholeReason(file.error!);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    ref.current?.focus();
  }, [file.id]);
  // The panel also goes when the file stops being failed (retried from the card, synced): the focus
  // it had goes to the list rather than to the page. A layout effect: it runs before the panel leaves.
  useLayoutEffect(() => {
    const panel = ref.current;
    const list = panel?.parentElement?.querySelector<HTMLElement>('[role="list"]');
    return () => {
      if (panel?.contains(document.activeElement)) list?.focus();
    };
  }, []);
  const hide = () => {
    const list = ref.current?.parentElement?.querySelector<HTMLElement>('[role="list"]');
    onHide();
    // Back on the row's "Details" if it is still in view, else on the list.
    (list?.querySelector<HTMLElement>(`[data-reason-of="${file.id}"]`) ?? list)?.focus();
  };
  // A scan the re-check found gone was uploaded and verified once: it is not synced any more.
  const title = isNoLongerOnServer(file.error!) ? `Why ${visibleName(file.fileName)} is not synced any more` : `Why ${visibleName(file.fileName)} could not be uploaded`;
  return (
    <div
      ref={ref}
      id={id}
      className="notice notice-danger whole-reason"
      role="region"
      aria-label={title}
      tabIndex={-1}
      onKeyDown={(event) => {
        if (event.key === 'Escape') hide();
      }}
    >
      <Icon name="alert" size={18} />
      <div className="notice-body">
        <strong className="break-anywhere">{title}</strong>
        <p className="notice-message">{message}</p>
        {hint ? <p className="notice-hint">{hint}</p> : null}
        {detail ? <p className="notice-detail break-anywhere">{detail}</p> : null}
      </div>
      <div className="notice-action">
        <button type="button" className="button small" onClick={hide}>
          Hide details
        </button>
      </div>
    </div>
  );
}

/** The date a row shows: when it was synced, or, for a scan no longer on the server, when that was found. */
function whenText(file: FileView): string {
  const missing = foundMissingAt(file);
  if (missing !== null) return ` · found missing ${formatDateTime(missing)}`;
  return file.syncedAt ? ` · ${formatDateTime(file.syncedAt)}` : '';
}

/** A retry seconds or minutes away is said as such; a far one by its date. */
function nextTry(at: number, now = Date.now()): string {
  const seconds = Math.round((at - now) / 1000);
  if (seconds <= 1) return 'trying again now';
  if (seconds < 3600) return `next try in ${formatDuration(seconds)}`;
  return `next try ${formatDateTime(at)}`;
}
