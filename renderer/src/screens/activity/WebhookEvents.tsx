import type { WebhookActivityView, WebhookVerdict } from '../../../../shared/bridge.js';
import { useBridgeEvent, useBridgeQuery } from '../../bridge/context.js';
import { EmptyState } from '../../components/EmptyState.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon, type IconName } from '../../components/Icon.js';
import { formatDateTime } from '../../format.js';

const ACTIVITY_LIMIT = 500;

const VERDICT_LOOK: Record<WebhookVerdict, { label: string; tone: string; icon: IconName }> = {
  accepted: { label: 'Verified', tone: 'success', icon: 'shield' },
  duplicate: { label: 'Duplicate', tone: 'neutral', icon: 'info' },
  rejected: { label: 'Rejected', tone: 'danger', icon: 'alert' },
};

const EVENT_NAMES: Record<string, string> = {
  'patient.created': 'Patient created',
  'patient.updated': 'Patient updated',
  'order.created': 'Order created',
  'order.updated': 'Order updated',
  'document.created': 'Document created',
  'document.uploaded': 'Document uploaded',
  'document.deleted': 'Document deleted',
  // IT marked its stored file lost (admin verify --mark-lost): this computer re-checks its synced files soon.
  'document.lost': 'Document’s file lost on the server',
  // IT restored that file from a backup (admin verify --mark-restored): the document has its content again.
  'document.restored': 'Document’s file restored on the server',
};

export function WebhookEvents() {
  const activity = useBridgeQuery((client) => client.webhookActivity(ACTIVITY_LIMIT), []);
  useBridgeEvent((event) => {
    if (event.type === 'webhook') activity.setData((list) => list && withNewest(list, event.activity));
  });
  if (activity.error) return <ErrorNotice error={activity.error} />;
  const entries = activity.data;
  if (entries && entries.length === 0) {
    return (
      <EmptyState icon="webhook" title="No notifications yet">
        When the server reports a change — a new patient, an order, an uploaded document — it appears here, with whether its signature was valid.
      </EmptyState>
    );
  }
  return (
    <table className="data-table" aria-label="Server notifications">
      <thead>
        <tr>
          <th scope="col">Received</th>
          <th scope="col">Check</th>
          <th scope="col">Event</th>
          <th scope="col">Patient</th>
          <th scope="col">Message</th>
        </tr>
      </thead>
      <tbody>
        {entries?.map((entry) => <WebhookRow key={entry.id} entry={entry} />)}
      </tbody>
    </table>
  );
}

/** Newest first, each delivery once: one told while the list was being read may be in it already. */
function withNewest(list: WebhookActivityView[], told: WebhookActivityView): WebhookActivityView[] {
  return [told, ...list.filter((entry) => entry.id !== told.id)].slice(0, ACTIVITY_LIMIT);
}

function WebhookRow({ entry }: { entry: WebhookActivityView }) {
  const look = VERDICT_LOOK[entry.verdict];
  return (
    <tr data-verdict={entry.verdict} data-event-type={entry.eventType ?? ''}>
      <td className="tabular nowrap">{formatDateTime(entry.receivedAt)}</td>
      <td>
        <span className={`badge tone-${look.tone}`}>
          <Icon name={look.icon} size={14} /> {look.label}
        </span>
      </td>
      <td>{entry.eventType ? (EVENT_NAMES[entry.eventType] ?? entry.eventType) : <span className="muted">Unreadable</span>}</td>
      <td className="mono small">{entry.patientId ?? '—'}</td>
      <td className="small">
        {entry.reason ? <span className={entry.verdict === 'rejected' ? 'tone-text-danger' : 'muted'}>{entry.reason}</span> : <span className="mono muted">{entry.messageId}</span>}
      </td>
    </tr>
  );
}
