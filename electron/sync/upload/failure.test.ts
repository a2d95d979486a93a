import { describe, expect, it } from 'vitest';
import { ApiNetworkError, ApiProblemError, TokenError, AbortedError, toNetworkError } from '../api/api-errors.js';
import { FileChangedDuringUploadError } from '../api/api-client.js';
import { retryDelayMs } from '../api/backoff.js';
import { classifyFailure, PROXY_TOO_LARGE_MESSAGE, VerificationError } from './failure.js';

const problem = (status: number, detail = 'detail', retryAfter: number | null = null) =>
  new ApiProblemError(status, { type: 't', title: 't', status, detail, instance: '/', messageKey: 'K', occurredAt: '2026-01-01T00:00:00.000Z' }, retryAfter);

describe('error policy', () => {
  it('retries 429, 5xx, network, token and verification trouble; fails 400/403/404/413 with the server detail', () => {
    expect(classifyFailure(problem(429, 'slow down', 9))).toMatchObject({ kind: 'retry', code: 'RATE_LIMITED', retryAfterSeconds: 9 });
    expect(classifyFailure(problem(503))).toMatchObject({ kind: 'retry', code: 'SERVER_ERROR' });
    expect(classifyFailure(new ApiNetworkError('ECONNRESET', 'reset'))).toMatchObject({ kind: 'retry', code: 'UNREACHABLE', offline: true });
    expect(classifyFailure(new TokenError(429, 'rate', null, 4))).toMatchObject({ kind: 'retry', code: 'RATE_LIMITED', retryAfterSeconds: 4 });
    expect(classifyFailure(new TokenError(401, 'invalid_client', 'bad secret'))).toMatchObject({ kind: 'retry', code: 'BAD_CREDENTIALS' });
    expect(classifyFailure(new VerificationError('short'))).toMatchObject({ kind: 'retry', code: 'VERIFY_FAILED' });
    expect(classifyFailure(problem(409))).toMatchObject({ kind: 'retry', code: 'CONFLICT' });
    expect(classifyFailure(problem(413, 'over the limit of 10 bytes'))).toEqual({ kind: 'permanent', code: 'TOO_LARGE', message: 'The file is larger than the server accepts.', detail: 'over the limit of 10 bytes' });
    // A proxy's 413 (not problem details): IT's setting, so the file waits instead of failing.
    const foreign = new ApiProblemError(413, { type: 'about:blank', title: 'HTTP 413', status: 413, detail: 'nginx: client_max_body_size', instance: '/', messageKey: 'UNKNOWN', occurredAt: '2026-01-01T00:00:00.000Z' }, null, true);
    expect(classifyFailure(foreign)).toMatchObject({ kind: 'retry', code: 'TOO_LARGE', message: PROXY_TOO_LARGE_MESSAGE, offline: false });
    expect(classifyFailure(problem(404))).toMatchObject({ kind: 'permanent', code: 'NOT_FOUND' });
    expect(classifyFailure(problem(400, 'fileName must not be blank'))).toMatchObject({ kind: 'permanent', code: 'INVALID_NAME' });
    expect(classifyFailure(problem(403, 'patient p has not given consent to organization o'))).toMatchObject({ kind: 'permanent', code: 'NO_CONSENT' });
    expect(classifyFailure(problem(403, 'organization o has no access to patient p'))).toMatchObject({ kind: 'permanent', code: 'NO_ACCESS' });
    expect(classifyFailure(problem(403, 'the token lacks the scope Patient.File.Write'))).toMatchObject({ kind: 'permanent', code: 'MISSING_SCOPE' });
    expect(classifyFailure(problem(403, 'the client c has no access to organization o'))).toMatchObject({ kind: 'permanent', code: 'WRONG_ORGANIZATION' });
    expect(classifyFailure(new FileChangedDuringUploadError('shorter'))).toMatchObject({ kind: 'changed' });
    expect(classifyFailure(new AbortedError('paused'))).toEqual({ kind: 'stopped' });
    expect(classifyFailure(Object.assign(new Error('gone'), { code: 'ENOENT' }))).toEqual({ kind: 'missing' });
    expect(classifyFailure(Object.assign(new Error('locked'), { code: 'EBUSY' }))).toMatchObject({ kind: 'retry' });
  });

  it('never takes a failure on this computer, wrapped by the HTTP client, for the server being unreachable', () => {
    const wrapped = (cause: Error) => Object.assign(new Error('request failed', { cause }), { name: 'RequestError', code: (cause as NodeJS.ErrnoException).code ?? 'ERR_GOT_REQUEST_ERROR' });
    expect(classifyFailure(toNetworkError(wrapped(new FileChangedDuringUploadError('still being written'))))).toMatchObject({ kind: 'changed' });
    expect(classifyFailure(toNetworkError(wrapped(Object.assign(new Error('gone'), { code: 'ENOENT' }))))).toEqual({ kind: 'missing' });
    expect(classifyFailure(toNetworkError(wrapped(new TypeError('a bug of ours'))))).toMatchObject({ kind: 'retry', code: 'INTERNAL', offline: false });
    expect(classifyFailure(toNetworkError(wrapped(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))))).toMatchObject({ kind: 'retry', code: 'UNREACHABLE', offline: true });
  });

  it('backs off exponentially with jitter, capped, and honours Retry-After', () => {
    const policy = { baseMs: 1000, maxMs: 60_000 };
    expect(retryDelayMs(policy, 1, null, () => 0)).toBe(500);
    expect(retryDelayMs(policy, 1, null, () => 0.999)).toBeLessThan(1000);
    expect(retryDelayMs(policy, 4, null, () => 0)).toBe(4000);
    expect(retryDelayMs(policy, 30, null, () => 1)).toBe(60_000);
    expect(retryDelayMs(policy, 30, null, () => 0)).toBe(30_000);
    expect(retryDelayMs(policy, 1, 7, () => 0)).toBe(7000);
    expect(retryDelayMs(policy, 1, 7, () => 0.5)).toBe(7500);
    const spread = new Set(Array.from({ length: 50 }, () => retryDelayMs(policy, 3, null)));
    expect(spread.size).toBeGreaterThan(10);
  });
  it("counts a proxy's word that the server behind it does not answer as the server unavailable, not a Retry-After the server asked for", () => {
    expect(classifyFailure(new ApiNetworkError('ECONNREFUSED', 'refused'))).toMatchObject({ offline: true, unavailable: true });
    for (const status of [502, 503, 504]) expect(classifyFailure(problem(status))).toMatchObject({ code: 'SERVER_ERROR', offline: false, unavailable: true });
    expect(classifyFailure(new TokenError(502, 'server_error', null))).toMatchObject({ code: 'SERVER_ERROR', unavailable: true });
    // The server's own 503 (a full disk, a busy database) asks for a time, which is kept; so is a 429's.
    expect(classifyFailure(problem(503, 'disk full', 30))).toMatchObject({ code: 'SERVER_ERROR', unavailable: false });
    expect(classifyFailure(problem(429, 'slow down', 9))).toMatchObject({ unavailable: false });
    expect(classifyFailure(problem(500))).toMatchObject({ code: 'SERVER_ERROR', unavailable: false });
  });
});
