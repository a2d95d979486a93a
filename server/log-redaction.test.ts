import { describe, expect, it } from 'vitest';
import { redactedUrl } from './log-redaction.js';

describe('request log redaction', () => {
  it('keeps the path and harmless parameters, and replaces signatures and secrets', () => {
    expect(redactedUrl('/storage/v1/documents/d1/content?v=2&expires=1800000000&sig=abcDEF_-123')).toBe('/storage/v1/documents/d1/content?v=2&expires=1800000000&sig=[redacted]');
    expect(redactedUrl('/oauth2/token?client_id=c1&CLIENT_SECRET=s3cr3t&x=1')).toBe('/oauth2/token?client_id=c1&CLIENT_SECRET=[redacted]&x=1');
    expect(redactedUrl('/v1/patients?name=sig=1')).toBe('/v1/patients?name=sig=1');
    expect(redactedUrl('/healthz')).toBe('/healthz');
  });
});
