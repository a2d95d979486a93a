/**
 * Puts every request to a route that touches a patient's files into the audit log: a route names
 * its action in `config.audit`, and the hook below (first of its onRequest hooks, so a request
 * refused for its token is recorded too) notes the entry when the response is over — answered,
 * refused or cut off. Handlers add what only they know (the document's patient on storage routes,
 * the version, a search's result count) to `request.auditNote`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { AuditAction, AuditEntryRecord } from '../db/types.js';
import type { AuditLog } from './log.js';

export interface AuditRouteConfig {
  action: AuditAction;
  /**
   * A resumable (tus) upload: recorded when it completes or is refused, not for every chunk,
   * creation or offset query that goes well.
   */
  resumable?: boolean;
}

/** What a handler learnt that the entry should say. */
export interface AuditNote {
  patientId?: string;
  organizationId?: string;
  clientId?: string | null;
  documentId?: string;
  version?: number;
  /** The access happened (a resumable upload committed, say) whatever became of the answer. */
  completed?: boolean;
  /** The refusal's reason as the client was told it (set by the problem plugin). */
  reason?: string;
  /** Work that may outlive the connection (an upload's commit): the entry waits for it. */
  settled?: Promise<void>;
  detail: Record<string, unknown>;
}

declare module 'fastify' {
  interface FastifyRequest {
    auditNote: AuditNote | null;
  }
  interface FastifyContextConfig {
    audit?: AuditRouteConfig;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The status nginx uses for "the client closed the connection before an answer". */
export const CLOSED_BEFORE_ANSWER = 499;
const REASON_MAX = 300;

function uuidOrNull(value: unknown): string | null {
  return typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : null;
}

/** The entry for a request whose response is over (or whose connection closed first); `startedAt` is when it came in. */
export function entryOf(request: FastifyRequest, reply: FastifyReply, action: AuditAction, note: AuditNote, startedAt: Date): AuditEntryRecord {
  const raw = reply.raw;
  const answered = raw.headersSent;
  const status = answered ? raw.statusCode : CLOSED_BEFORE_ANSWER;
  const outcome = note.completed || (answered && status < 400) ? 'allowed' : answered && status < 500 ? 'refused' : 'failed';
  const detail = note.detail;
  if (outcome !== 'allowed' && note.reason !== undefined) detail.reason = note.reason.length > REASON_MAX ? `${note.reason.slice(0, REASON_MAX)}…` : note.reason;
  if (!raw.writableFinished) detail.finished = false;
  // Behind a proxy named in PATIENT_DOCS_TRUSTED_PROXIES, request.ip is already the workstation's
  // address. From anyone else, an X-Forwarded-For is kept beside the connection's own address, as
  // said, not verified.
  const forwarded = request.headers['x-forwarded-for'];
  if (typeof forwarded === 'string' && request.ip === request.socket.remoteAddress) detail.forwardedFor = forwarded.slice(0, 200);
  const params = request.params as { patientId?: unknown; documentId?: unknown } | undefined;
  return {
    at: startedAt.toISOString(),
    action,
    outcome,
    status,
    organizationId: note.organizationId ?? uuidOrNull(request.headers['organization-id']),
    clientId: note.clientId !== undefined ? note.clientId : (request.principal?.clientId ?? null),
    patientId: note.patientId ?? uuidOrNull(params?.patientId),
    documentId: note.documentId ?? uuidOrNull(params?.documentId),
    version: note.version ?? null,
    requestId: request.id,
    remoteAddress: request.ip ?? null,
    detail: Object.keys(detail).length > 0 ? detail : null,
  };
}

/**
 * The onRequest hook of audited routes (routes without `config.audit` pass through at once). While
 * the log cannot be written and too many entries wait, the access is refused before anything else.
 */
export function auditAccess(log: AuditLog, now: () => Date = () => new Date()) {
  const hooks = new WeakMap<AuditRouteConfig, ReturnType<typeof auditHookFor>>();
  return function trackAccess(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const config = request.routeOptions.config.audit;
    if (config === undefined) return done();
    let hook = hooks.get(config);
    if (hook === undefined) hooks.set(config, (hook = auditHookFor(log, config, now)));
    hook(request, reply, done);
  };
}

/** The same hook for a route whose audit config is known when it is registered (see app.ts). */
export function auditHookFor(log: AuditLog, config: AuditRouteConfig, now: () => Date = () => new Date()) {
  return function trackAccess(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const refusal = log.refusal();
    if (refusal) return done(refusal);
    const note: AuditNote = { detail: {} };
    request.auditNote = note;
    // The time of the access is when it began (a long download is listed where it started).
    const startedAt = now();
    const write = (): void => {
      if (config.resumable && !note.completed && !(reply.raw.headersSent && reply.raw.statusCode >= 400)) return;
      log.record(entryOf(request, reply, config.action, note, startedAt));
    };
    reply.raw.once('close', () => {
      if (note.settled) void note.settled.then(write);
      else write();
    });
    done();
  };
}

/**
 * For handlers whose work goes on after a client hangs up (an upload being committed): the entry
 * is written once the returned function is called, so it says whether the upload was stored.
 */
export function holdEntry(request: FastifyRequest): () => void {
  const note = request.auditNote;
  if (!note) return () => undefined;
  let release!: () => void;
  note.settled = new Promise<void>((resolve) => (release = resolve));
  return release;
}

/** Decorates requests with their audit note (null on routes that are not audited). */
export const auditPlugin = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('auditNote', null);
  },
  { name: 'audit' },
);
