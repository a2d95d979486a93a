import type { FailureReason, PairView } from '../../../../shared/bridge.js';
import { ErrorNotice, InfoNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { canRetry, failureHint, failureMessage, isNoLongerOnServer } from '../../documents/failure-hints.js';
import { formatCount, formatFileCount } from '../../format.js';
import { visibleName } from '../../../../shared/names.js';

/**
 * Why a pair needs attention, each kind of trouble on its own: the folder, the failed files, the files waiting to be retried.
 * None is a live region: their counts move with every file (files being written, waiting), and the
 * sync announcer (components/SyncAnnouncer) says what happened once per burst instead.
 */
export function PairNotices({ pair, onRetryAll }: { pair: PairView; onRetryAll: () => void }) {
  return (
    <>
      {pair.folderError ? (
        <ErrorNotice title="The scan folder cannot be found" error={pair.folderError} announce={false}>
          <p className="notice-hint">It is looked for every few seconds; files sync again when it is back.</p>
        </ErrorNotice>
      ) : null}
      {pair.counts.failed > 0 && pair.failureReasons.length > 0 ? (
        <FailureNotice count={pair.counts.failed} reasons={pair.failureReasons} onRetryAll={onRetryAll} />
      ) : null}
      {pair.skipped > 0 ? (
        <InfoNotice announce={false}>
          <strong>{pair.skipped === 1 ? 'One empty file skipped' : `${formatFileCount(pair.skipped)} skipped: they are empty`}</strong>
          <p className="notice-message">An empty file (0 bytes) has nothing to upload; it is uploaded by itself once it has content. Nothing to do.</p>
        </InfoNotice>
      ) : null}
      {pair.unreadable.length > 0 ? (
        <InfoNotice tone="warning" announce={false}>
          <strong>{pair.unreadable.length === 1 ? `'${pair.unreadable[0]}' cannot be opened` : `${formatFileCount(pair.unreadable.length)} cannot be opened`}</strong>
          <p className="notice-message">{UNREADABLE_HINT}</p>
          {pair.unreadable.length > 1 ? <p className="notice-hint">{pair.unreadable.slice(0, 5).join(', ')}{pair.unreadable.length > 5 ? ', …' : ''}</p> : null}
        </InfoNotice>
      ) : null}
      {pair.heldForDiskFull > 0 ? (
        <InfoNotice tone="warning" announce={false}>
          <strong>{pair.heldForDiskFull === 1 ? 'One file waits' : `${formatFileCount(pair.heldForDiskFull)} wait`} for space on this computer’s disk</strong>
          <p className="notice-message">{DISK_FULL_HINT}</p>
        </InfoNotice>
      ) : pair.settling > pair.unreadable.length && !pair.paused ? (
        <InfoNotice announce={false}>
          {pair.settling - pair.unreadable.length === 1 ? 'One file is still being written' : `${formatFileCount(pair.settling - pair.unreadable.length)} are still being written`}; uploads start once they stop changing.
        </InfoNotice>
      ) : null}
      {pair.counts.waiting > 0 && pair.retryReason && !pair.paused && pair.heldForDiskFull === 0 ? (
        <InfoNotice tone="warning" announce={false}>
          <strong>{pair.counts.waiting === 1 ? 'One file will be tried again' : `${formatFileCount(pair.counts.waiting)} will be tried again`}</strong>
          <p className="notice-message">{pair.retryReason.message}</p>
          {/* Once the cause is fixed (the server back, the network cable in), no need to wait for the retry time. */}
          <button type="button" className="button small" onClick={onRetryAll}>
            <Icon name="retry" size={14} /> Try now
          </button>
        </InfoNotice>
      ) : null}
    </>
  );
}

const DISK_FULL_HINT = 'Nothing is lost: they sync by themselves once there is space. Free some space on this computer’s disk (delete old exports, empty the recycle bin).';

const UNREADABLE_HINT =
  'The scanner software may still have it open, or this computer’s account is not allowed to read it. It is uploaded by itself as soon as it can be read; if this stays, close the program that has it open or ask IT to check the file’s permissions.';

/**
 * The failed files of a folder, by reason. Scans the re-check found gone from the server after they
 * were synced are not "could not be uploaded": they were, and the title says what did happen. Retry
 * all is offered only when there is something to retry (a scan in neither place has nothing to upload).
 */
function FailureNotice({ count, reasons, onRetryAll }: { count: number; reasons: FailureReason[]; onRetryAll: () => void }) {
  const gone = reasons.filter(isNoLongerOnServer).reduce((sum, reason) => sum + reason.count, 0);
  const names = reasons.flatMap((reason) => reason.fileNames ?? []);
  const title =
    gone === 0
      ? count === 1
        ? names[0]
          ? `${baseName(names[0])} could not be uploaded`
          : 'One file could not be uploaded'
        : `${formatFileCount(count)} could not be uploaded`
      : gone === count
        ? count === 1
          ? 'One scan is no longer on the server'
          : `${formatCount(count)} scans are no longer on the server`
        : `${formatFileCount(count)} need attention`;
  const action = reasons.some((reason) => canRetry(reason.code)) ? (
    <button type="button" className="button" onClick={onRetryAll}>
      <Icon name="retry" size={16} /> Retry all
    </button>
  ) : undefined;
  if (reasons.length === 1) {
    const reason = reasons[0]!;
    const hint = failureHint(reason.code, count);
    return (
      // One file's document id says nothing of the others: their own Details have theirs.
      <ErrorNotice title={title} error={{ ...reason, message: failureMessage(reason, count), detail: count > 1 && isNoLongerOnServer(reason) ? undefined : reason.detail }} action={action} announce={false}>
        {hint ? <p className="notice-hint">{hint}</p> : null}
        <FailedNames names={names} count={count} />
      </ErrorNotice>
    );
  }
  return (
    <ErrorNotice title={title} error={{ message: '' }} action={action} announce={false}>
      <ul className="reason-list" aria-label="Reasons">
        {reasons.map((reason) => {
          const hint = failureHint(reason.code, reason.count);
          return (
            <li key={reason.code} data-code={reason.code}>
              <strong>{formatFileCount(reason.count)}:</strong> {failureMessage(reason, reason.count)}
              {hint ? ` ${hint}` : ''}
            </li>
          );
        })}
      </ul>
      <FailedNames names={names} count={count} />
    </ErrorNotice>
  );
}

function baseName(relativePath: string): string {
  return visibleName(relativePath.slice(relativePath.lastIndexOf('/') + 1));
}

/** Which files, by name (the newest few; the file list below has them all), with their case folder. */
function FailedNames({ names, count }: { names: string[]; count: number }) {
  if (names.length === 0 || (count === 1 && !names[0]!.includes('/'))) return null;
  const rest = count - names.length;
  return (
    <p className="notice-files break-anywhere">
      {count === 1 ? 'In ' : 'Files: '}
      {count === 1 ? visibleName(names[0]!.slice(0, names[0]!.lastIndexOf('/'))) : names.map(visibleName).join(', ')}
      {rest > 0 ? ` and ${formatFileCount(rest).replace(/files?$/, rest === 1 ? 'other' : 'others')}` : ''}
    </p>
  );
}
