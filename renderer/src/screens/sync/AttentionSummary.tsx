import type { PairView } from '../../../../shared/bridge.js';
import { visibleName } from '../../../../shared/names.js';
import { Icon } from '../../components/Icon.js';
import { failureMessage } from '../../documents/failure-hints.js';
import { formatCount, formatFileCount } from '../../format.js';

/** Whether a folder needs someone: a failed file, its folder gone or unreadable, a file that cannot be opened, a full disk. */
export function folderNeedsAttention(pair: PairView): boolean {
  return pair.counts.failed > 0 || pair.folderError !== null || pair.unreadable.length > 0 || pair.heldForDiskFull > 0;
}

/** The last part of a folder's path, as staff name it ("chair 2"). */
export function folderName(folder: string): string {
  const trimmed = folder.replace(/[\\/]+$/, '');
  return trimmed.slice(Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\')) + 1) || trimmed;
}

/** What is wrong with one folder, in a line that names the file when there is one. */
function problemOf(pair: PairView): string {
  if (pair.folderError) return `The folder cannot be found: ${pair.folderError.message}`;
  if (pair.counts.failed > 0) {
    const reason = pair.failureReasons[0];
    const names = pair.failureReasons.flatMap((entry) => entry.fileNames ?? []).map((name) => visibleName(name.slice(name.lastIndexOf('/') + 1)));
    const which =
      names.length === 0 ? formatFileCount(pair.counts.failed) : pair.counts.failed === 1 ? names[0]! : `${names.join(', ')}${pair.counts.failed > names.length ? ` and ${formatCount(pair.counts.failed - names.length)} more` : ''}`;
    return `${which} could not be uploaded${reason ? `: ${failureMessage(reason, reason.count)}` : ''}`;
  }
  if (pair.unreadable.length > 0) return `${pair.unreadable.length === 1 ? visibleName(pair.unreadable[0]!) : formatFileCount(pair.unreadable.length)} cannot be opened`;
  return `${formatFileCount(pair.heldForDiskFull)} wait for space on this computer’s disk`;
}

/**
 * At the top of Sync: how many folders need someone, each with its problem and the file's name,
 * and a button that goes to the folder's card. Not a live region: the sync announcer says when a
 * folder gets into trouble.
 */
export function AttentionSummary({ pairs }: { pairs: readonly PairView[] }) {
  const needing = pairs.filter(folderNeedsAttention);
  if (needing.length === 0) return null;
  const goTo = (pairId: string) => {
    const card = document.querySelector<HTMLElement>(`.pair-card[data-pair-id="${CSS.escape(pairId)}"]`);
    card?.scrollIntoView({ block: 'start' });
    card?.focus({ preventScroll: true });
  };
  return (
    <section className="notice notice-danger attention-summary" aria-labelledby="attention-summary-title" data-testid="attention-summary">
      <Icon name="alert" size={18} />
      <div className="notice-body">
        <h2 id="attention-summary-title" className="attention-summary-title">
          {needing.length === 1 ? 'One folder needs attention' : `${formatCount(needing.length)} folders need attention`}
        </h2>
        <ul className="attention-list">
          {needing.map((pair) => (
            <li key={pair.id}>
              <button type="button" className="link-button" onClick={() => goTo(pair.id)}>
                {visibleName(folderName(pair.folder))} → {visibleName(pair.patientName ?? 'the patient')}
              </button>
              <span className="break-anywhere">: {problemOf(pair)}</span>
            </li>
          ))}
        </ul>
      </div>
    </section>
  );
}
