/**
 * Problem details (SPEC §7, RFC 9457) — one builder for every error the server answers,
 * and one registry of machine keys that the UI turns into plain language.
 */

export const MESSAGE_KEYS = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT',
  410: 'GONE',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  416: 'RANGE_NOT_SATISFIABLE',
  429: 'RATE_LIMITED',
  500: 'INTERNAL_ERROR',
  503: 'SERVICE_UNAVAILABLE',
} as const;

export type ProblemStatus = keyof typeof MESSAGE_KEYS;
export type MessageKey = (typeof MESSAGE_KEYS)[ProblemStatus];

const TITLES: Record<ProblemStatus, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  messageKey: string;
  occurredAt: string;
  /** Correlates a 500 with the server log; never carries internals. */
  requestId?: string;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function isProblemStatus(status: number): status is ProblemStatus {
  return Object.hasOwn(MESSAGE_KEYS, status);
}

export function problemSlug(status: number): string {
  const key = isProblemStatus(status) ? MESSAGE_KEYS[status] : MESSAGE_KEYS[500];
  return key.toLowerCase().replaceAll('_', '-');
}

export interface ProblemInput {
  status: number;
  detail: string;
  instance: string;
  /** Base of the problem `type` URLs, normally the server's public URL. */
  typeBase: string;
  occurredAt?: Date;
  requestId?: string;
}

export function buildProblem(input: ProblemInput): ProblemDetails {
  const status = isProblemStatus(input.status) ? input.status : 500;
  const problem: ProblemDetails = {
    type: `${input.typeBase.replace(/\/$/, '')}/problems/${problemSlug(status)}`,
    title: TITLES[status],
    status,
    detail: input.detail,
    instance: input.instance,
    messageKey: MESSAGE_KEYS[status],
    occurredAt: (input.occurredAt ?? new Date()).toISOString(),
  };
  if (input.requestId !== undefined) problem.requestId = input.requestId;
  return problem;
}

export function isProblemDetails(value: unknown): value is ProblemDetails {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return typeof candidate.status === 'number' && typeof candidate.messageKey === 'string' && typeof candidate.detail === 'string';
}
