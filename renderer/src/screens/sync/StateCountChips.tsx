import type { FileState, StateCounts } from '../../../../shared/bridge.js';
import { fileStateLabel, fileStateTone } from '../../components/StateBadge.js';
import { formatCount } from '../../format.js';

const ORDER: FileState[] = ['queued', 'creating', 'uploading', 'verifying', 'waiting', 'synced', 'failed'];

export function StateCountChips({ counts }: { counts: StateCounts }) {
  const shown = ORDER.filter((state) => counts[state] > 0);
  if (shown.length === 0) return null;
  return (
    <ul className="count-chips" aria-label="Files by state">
      {shown.map((state) => (
        <li key={state} className={`count-chip tone-${fileStateTone(state)}`} data-state={state}>
          <span className="count-chip-number">{formatCount(counts[state])}</span> {fileStateLabel(state).toLowerCase()}
        </li>
      ))}
    </ul>
  );
}
