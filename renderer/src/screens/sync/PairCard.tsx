import { useEffect, useRef, useState } from 'react';
import type { PairView } from '../../../../shared/bridge.js';
import { useBridge } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { MiddleName } from '../../components/MiddleName.js';
import { ProgressBar } from '../../components/ProgressBar.js';
import { PairStateBadge } from '../../components/StateBadge.js';
import { formatBytes, formatCount, formatDuration, formatFileCount, formatRate } from '../../format.js';
import { CaseList } from './CaseList.js';
import { PairFiles } from './PairFiles.js';
import { PairNotices } from './PairNotices.js';
import { StateCountChips } from './StateCountChips.js';

export function PairCard({
  pair,
  onBrowsePatient,
  onChanged,
  onStopping,
  announce,
  demo = false,
}: {
  pair: PairView;
  /** The folder goes to the embedded server's demo patient (said beside the name). */
  demo?: boolean;
  onBrowsePatient: (patientId: string) => void;
  onChanged: () => void;
  /** "Stop syncing" was confirmed (true), or refused by the engine (false). */
  onStopping: (confirmed: boolean) => void;
  /** Says something to a screen reader (what a button did when the button itself goes away). */
  announce: (message: string) => void;
}) {
  const client = useBridge();
  const [actionError, setActionError] = useState<BridgeError | null>(null);
  const [openedFolder, setOpenedFolder] = useState<string | null>(null);
  const cardRef = useRef<HTMLElement>(null);
  /** Focus the card itself when the control that had the focus goes away with what it did (Retry all, Stop syncing). */
  const keepFocus = () => {
    if (cardRef.current?.contains(document.activeElement)) cardRef.current.focus();
  };
  const run = async (action: () => Promise<unknown>): Promise<boolean> => {
    setActionError(null);
    try {
      await action();
      onChanged();
      return true;
    } catch (failure) {
      setActionError(toBridgeError(failure));
      return false;
    }
  };
  /** Retry (failed files) or Try now (waiting ones), for the folder or one file: says what it did, since the notice or row with the button may go. */
  const retry = (target: { pairId: string } | { fileId: number }) =>
    void run(async () => announce(retried(await client.retryFailed(target))));
  const fileCount = Object.values(pair.counts).reduce((sum, count) => sum + count, 0);

  return (
    <article ref={cardRef} tabIndex={-1} className={`card pair-card state-${pair.state}`} aria-label={`${pair.folder} to ${pair.patientName ?? pair.patientId}`} data-pair-id={pair.id}>
      <header className="pair-header">
        {/* The card's heading: where from, to whom (the "Cases" heading below it is a level down). */}
        <h2 className="pair-route">
          <span className="pair-folder">
            <Icon name="folder" size={18} />
            {/* Cut in the middle: the folder's own name (chair 2, the demo folder) stays in view. */}
            <MiddleName name={pair.folder} />
          </span>
          <Icon name="arrowRight" size={16} className="pair-arrow" />
          <span className="pair-patient">
            <Icon name="patients" size={18} />
            <span>
              <strong>
                {pair.patientName ?? 'Patient'}
                {demo ? <span className="demo-tag">demo</span> : null}
              </strong>
              <span className="pair-remote-path">{pair.remoteBasePath}</span>
            </span>
          </span>
        </h2>
        <PairStateBadge state={pair.state} />
      </header>

      <PairProgress pair={pair} fileCount={fileCount} />
      <StateCountChips counts={pair.counts} />
      <PairNotices pair={pair} onRetryAll={() => {
          keepFocus();
          retry({ pairId: pair.id });
        }}
      />
      {actionError ? <ErrorNotice error={actionError} /> : null}
      {openedFolder ? <p className="muted small">Opened {openedFolder}</p> : null}

      <div className="pair-actions">
        {pair.paused ? (
          <button type="button" className="button" onClick={() => void run(() => client.resumePair(pair.id))}>
            <Icon name="play" size={16} /> Resume
          </button>
        ) : (
          <button type="button" className="button" onClick={() => void run(() => client.pausePair(pair.id))}>
            <Icon name="pause" size={16} /> Pause
          </button>
        )}
        <button type="button" className="button" onClick={() => void run(async () => setOpenedFolder(await client.openFolder(pair.id)))}>
          <Icon name="folderOpen" size={16} /> Open folder
        </button>
        <button type="button" className="button" onClick={() => onBrowsePatient(pair.patientId)}>
          <Icon name="patients" size={16} /> Patient files
        </button>
        <RemovePairButton
          onConfirm={() => {
            // The card leaves the page with its folder; the sync screen then puts the focus on the next card.
            onStopping(true);
            void run(() => client.removePair(pair.id)).then((done) => {
              if (!done) onStopping(false);
            });
          }}
        />
      </div>
      {pair.cases.length > 0 ? <CaseList cases={pair.cases} folder={pair.folder} /> : null}
      <PairFiles pairId={pair.id} label={`${pair.folder} to ${pair.patientName ?? 'the patient'}`} onRetry={(fileId) => retry({ fileId })} />
    </article>
  );
}

/** What Retry or Try now did, for a screen reader. */
function retried(count: number): string {
  return count === 0 ? 'Nothing to try again: the files are already on their way.' : `Trying ${formatFileCount(count)} again now.`;
}

/**
 * One measure for the text and the bar: items synced of all (a file, or a DICOM series as one).
 * Bytes and speed follow as detail only while something is moving; nothing is said of files not
 * taken on yet that the notices below say otherwise ("still being written").
 */
function PairProgress({ pair, fileCount }: { pair: PairView; fileCount: number }) {
  const { done, total } = pair.items;
  const seriesCounted = total !== fileCount;
  const noun = (count: number) => (seriesCounted ? `${formatCount(count)} ${count === 1 ? 'item' : 'items'}` : formatFileCount(count));
  const settled = pair.counts.synced + pair.counts.failed;
  const moving = pair.counts.uploading + pair.counts.creating + pair.counts.verifying + pair.counts.queued > 0;
  const summary =
    pair.heldForDiskFull > 0
      ? `${pair.counts.synced > 0 ? `${formatCount(pair.counts.synced)} synced, ` : ''}${formatCount(pair.heldForDiskFull)} waiting: this computer’s disk is full`
      : fileCount === 0
        ? pair.settling > 0
          ? `${formatFileCount(pair.settling)} found, not uploaded yet`
          : pair.skipped > 0
            ? 'Nothing to upload yet'
            : 'No scans in this folder yet: new files are uploaded as they arrive'
        : settled === fileCount && pair.counts.failed === 0
          ? fileCount === 1
            ? 'The file is synced and verified'
            : `All ${noun(total)} synced and verified`
          : `${formatCount(done)} of ${noun(total)} synced`;
  const extra = [
    seriesCounted ? 'a DICOM series counts as one item' : null,
    pair.skipped > 0 ? `${formatFileCount(pair.skipped)} skipped (empty)` : null,
  ].filter(Boolean);
  return (
    <div className="pair-progress">
      <ProgressBar done={done} total={total || 1} label={`${pair.folder} progress`} tone={pair.state === 'attention' ? 'danger' : pair.state === 'idle' ? 'success' : 'progress'} />
      <div className="pair-progress-text">
        <span>
          {summary}
          {extra.length > 0 ? <span className="muted"> · {extra.join(' · ')}</span> : null}
        </span>
        {moving && pair.bytesTotal > 0 ? (
          <span className="muted">
            {formatBytes(pair.bytesDone)} of {formatBytes(pair.bytesTotal)}
            {pair.rateBytesPerSecond > 0 ? ` · ${formatRate(pair.rateBytesPerSecond)}` : ''}
            {pair.etaSeconds !== null && pair.rateBytesPerSecond > 0 ? ` · about ${formatDuration(pair.etaSeconds)} left` : ''}
          </span>
        ) : pair.bytesTotal > 0 ? (
          <span className="muted">{formatBytes(pair.bytesTotal)}</span>
        ) : null}
      </div>
    </div>
  );
}

/**
 * "Stop syncing" asks first, in place. The focus follows the question (to its Cancel, the choice that
 * changes nothing) and comes back to "Stop syncing" on Cancel or Escape, instead of being lost with the
 * button that was replaced.
 */
function RemovePairButton({ onConfirm }: { onConfirm: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const cancelRef = useRef<HTMLButtonElement>(null);
  const askRef = useRef<HTMLButtonElement>(null);
  const moved = useRef(false);
  useEffect(() => {
    if (!moved.current) return;
    (confirming ? cancelRef : askRef).current?.focus();
  }, [confirming]);
  const ask = (next: boolean) => {
    moved.current = true;
    setConfirming(next);
  };
  if (!confirming) {
    return (
      <button ref={askRef} type="button" className="button quiet" onClick={() => ask(true)}>
        <Icon name="trash" size={16} /> Stop syncing
      </button>
    );
  }
  return (
    <span
      className="confirm-inline"
      role="group"
      aria-label="Confirm stop syncing"
      onKeyDown={(event) => {
        if (event.key === 'Escape') ask(false);
      }}
    >
      <span className="small">Files already uploaded stay on the server.</span>
      <button type="button" className="button danger" onClick={onConfirm}>
        Stop syncing
      </button>
      <button ref={cancelRef} type="button" className="button quiet" onClick={() => ask(false)}>
        Cancel
      </button>
    </span>
  );
}
