/** Subscriptions and their operations (SPEC §4.5, DESIGN §3 "Webhooks"): what the routes call. */
import { randomUUID } from 'node:crypto';
import { isSubscribableEvent } from '../../shared/events.js';
import type { DeadLetterDto, DeliveryAttemptDto, SubscribeBody, SubscriptionDto, WebhookMetricsDto } from '../../shared/schemas.js';
import type { Page, WebhookCounts, WebhookRepository, WebhookSubscriptionRecord } from '../db/types.js';
import { badRequest, conflict, notFound } from '../errors.js';
import type { SecretBox } from './secret-box.js';
import { CallbackRefused, type CallbackGuard } from './ssrf.js';

export interface WebhookActor {
  clientId: string;
  organizationId: string;
}

export function subscriptionDto(subscription: WebhookSubscriptionRecord): SubscriptionDto {
  const dto: SubscriptionDto = {
    id: subscription.id,
    events: subscription.events,
    callback: subscription.callback,
    organizationId: subscription.organizationId,
    createdAt: subscription.createdAt,
    status: subscription.status,
  };
  if (subscription.disabledReason !== null) dto.disabledReason = subscription.disabledReason;
  return dto;
}

export class WebhookService {
  constructor(
    private readonly webhooks: WebhookRepository,
    private readonly secrets: SecretBox,
    private readonly guard: CallbackGuard,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * The same subscription sent again (same callback, events and hmac, still active) is the one that
   * exists, not a second one: an integrator that retries after a lost answer would otherwise get every
   * event twice, under two messageIds that deduplication cannot match.
   */
  async subscribe(body: SubscribeBody, actor: WebhookActor): Promise<{ subscription: SubscriptionDto; created: boolean }> {
    body.events.forEach((event, index) => {
      if (!isSubscribableEvent(event)) {
        throw badRequest(`body/events/${index} '${event}' is not an event type; use patient.created, patient.updated, order.created, order.updated, document.created, document.uploaded, document.deleted, document.lost, document.restored or <kind>.all`);
      }
    });
    if (body.hmac.trim() === '') throw badRequest('body/hmac must not be blank');
    try {
      await this.guard.resolve(this.guard.parse(body.callback));
    } catch (error) {
      if (error instanceof CallbackRefused) throw badRequest(`body/callback ${error.message}`);
      throw error;
    }
    const events = [...new Set(body.events)].sort().join(' ');
    for (const existing of await this.webhooks.listSubscriptions(actor.organizationId)) {
      if (existing.status !== 'active' || existing.callback !== body.callback || [...new Set(existing.events)].sort().join(' ') !== events) continue;
      if (this.secrets.open(existing.sealedSecret, existing.id) === body.hmac) return { subscription: subscriptionDto(existing), created: false };
    }
    const id = randomUUID();
    const record = await this.webhooks.createSubscription({
      id,
      organizationId: actor.organizationId,
      clientId: actor.clientId,
      events: body.events,
      callback: body.callback,
      sealedSecret: this.secrets.seal(body.hmac, id),
      status: 'active',
      disabledReason: null,
      createdAt: this.now().toISOString(),
    });
    return { subscription: subscriptionDto(record), created: true };
  }

  async list(organizationId: string): Promise<SubscriptionDto[]> {
    return (await this.webhooks.listSubscriptions(organizationId)).map(subscriptionDto);
  }

  /** 404 for another organization's subscription as for a missing one: ids do not leak across organizations. */
  async get(organizationId: string, id: string): Promise<WebhookSubscriptionRecord> {
    const subscription = await this.webhooks.getSubscription(id.toLowerCase());
    if (!subscription || subscription.organizationId !== organizationId) throw notFound(`webhook subscription ${id} does not exist`);
    return subscription;
  }

  async remove(organizationId: string, id: string): Promise<void> {
    const subscription = await this.get(organizationId, id);
    await this.webhooks.deleteSubscription(subscription.id, this.now().toISOString());
  }

  async deliveries(organizationId: string, id: string, offset: number, limit: number): Promise<Page<DeliveryAttemptDto>> {
    const subscription = await this.get(organizationId, id);
    return this.webhooks.attempts(subscription.id, offset, limit);
  }

  async deadLetters(organizationId: string, id: string, offset: number, limit: number): Promise<Page<DeadLetterDto>> {
    const subscription = await this.get(organizationId, id);
    const page = await this.webhooks.deadLetters(subscription.id, offset, limit);
    return {
      total: page.total,
      rows: page.rows.map((message) => ({
        messageId: message.id,
        eventType: message.eventType,
        patientId: message.patientId,
        attempts: message.attempts,
        lastStatus: message.lastStatus,
        lastError: message.lastError,
        createdAt: message.createdAt,
        deadAt: message.updatedAt,
      })),
    };
  }

  async redeliver(organizationId: string, id: string, messageId: string): Promise<void> {
    const subscription = await this.get(organizationId, id);
    if (subscription.status !== 'active') throw conflict(`webhook subscription ${id} is ${subscription.status}${subscription.disabledReason ? ` (${subscription.disabledReason})` : ''}; subscribe again to receive messages`);
    const now = this.now();
    if (!(await this.webhooks.redeliver(subscription.id, messageId.toLowerCase(), now.getTime(), now.toISOString()))) {
      throw notFound(`message ${messageId} is not in the dead-letter queue of subscription ${id}`);
    }
  }

  async metrics(organizationId?: string): Promise<WebhookMetricsDto> {
    const counts: WebhookCounts = await this.webhooks.counts(organizationId);
    return counts;
  }
}
