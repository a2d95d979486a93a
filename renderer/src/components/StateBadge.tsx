import type { FileState, PairState } from '../../../shared/bridge.js';
import { Icon, type IconName } from './Icon.js';

interface StateLook {
  label: string;
  icon: IconName;
  tone: string;
}

/** One look per state, used everywhere a state appears, so staff learn it once. */
const FILE_STATE_LOOK: Record<FileState, StateLook> = {
  queued: { label: 'Queued', icon: 'clock', tone: 'neutral' },
  creating: { label: 'Preparing', icon: 'upload', tone: 'progress' },
  uploading: { label: 'Uploading', icon: 'upload', tone: 'progress' },
  verifying: { label: 'Verifying', icon: 'shield', tone: 'verify' },
  synced: { label: 'Synced', icon: 'checkCircle', tone: 'success' },
  waiting: { label: 'Retrying soon', icon: 'retry', tone: 'warning' },
  failed: { label: 'Failed', icon: 'alert', tone: 'danger' },
};

const PAIR_STATE_LOOK: Record<PairState, StateLook> = {
  idle: { label: 'Up to date', icon: 'checkCircle', tone: 'success' },
  syncing: { label: 'Syncing', icon: 'sync', tone: 'progress' },
  paused: { label: 'Paused', icon: 'pause', tone: 'neutral' },
  attention: { label: 'Needs attention', icon: 'alert', tone: 'danger' },
  offline: { label: 'Offline', icon: 'clock', tone: 'warning' },
};

export function fileStateLabel(state: FileState): string {
  return FILE_STATE_LOOK[state].label;
}

export function fileStateTone(state: FileState): string {
  return FILE_STATE_LOOK[state].tone;
}

export function FileStateBadge({ state }: { state: FileState }) {
  return <StateBadge state={state} look={FILE_STATE_LOOK[state]} />;
}

export function PairStateBadge({ state }: { state: PairState }) {
  return <StateBadge state={state} look={PAIR_STATE_LOOK[state]} />;
}

function StateBadge({ state, look }: { state: string; look: StateLook }) {
  return (
    <span className={`badge tone-${look.tone}`} data-state={state}>
      <Icon name={look.icon} size={14} />
      {look.label}
    </span>
  );
}
