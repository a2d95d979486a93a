/** `webhooks prune` of the admin CLI: what the webhook queue and the outbox no longer need goes. */
import type { ParsedValues } from './cli-common.js';
import { InputError } from './cli-common.js';
import { parseAuditTime } from '../audit/query-rules.js';
import type { WebhookPruneReport, WebhookRepository } from '../db/types.js';
import { ApiError } from '../errors.js';

function beforeFlag(raw: string): string {
  let before: string;
  try {
    before = parseAuditTime('before', raw);
  } catch (error) {
    if (error instanceof ApiError) throw new InputError(`--${error.detail}`);
    throw error;
  }
  if (Date.parse(before) > Date.now()) throw new InputError(`--before ${JSON.stringify(raw)} is in the future; only messages that ended before now can be removed`);
  return before;
}

const plural = (count: number, one: string, many: string): string => `${count} ${count === 1 ? one : many}`;

/** One line saying how many of each were removed, and what was kept. */
export function pruneLine(report: WebhookPruneReport, before: string, dead: boolean): string {
  const messages = report.delivered + report.cancelled + report.dead;
  const states = dead ? `${report.delivered} delivered, ${report.cancelled} cancelled and ${report.dead} dead` : `${report.delivered} delivered and ${report.cancelled} cancelled`;
  const kept = dead ? '' : ', and dead letters too (add --dead to remove them)';
  return (
    `removed ${states} ${messages === 1 ? 'message' : 'messages'} that ended before ${before}, with their ${plural(report.attempts, 'attempt', 'attempts')}, ` +
    `and ${plural(report.events, 'outbox event', 'outbox events')} no message needs any more; queued and in-flight messages are kept${kept}`
  );
}

/** The flags are checked before `webhooks` opens the database: a refused command opens nothing. */
export async function webhooksPruneCommand(webhooks: () => Promise<WebhookRepository>, values: ParsedValues, raw: string): Promise<string> {
  const before = beforeFlag(raw);
  const dead = values.dead === true;
  const report = await (await webhooks()).prune({ before, dead });
  if (values.json) return JSON.stringify({ before, ...report });
  return pruneLine(report, before, dead);
}
