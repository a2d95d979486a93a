/**
 * The admin CLI checks `audit`'s flags against a plain JSON schema (so it need not load typebox);
 * it must stay the admin API's AuditListQuery, rule for rule and in the same order (the first
 * failing rule is the one the CLI names).
 */
import { describe, expect, it } from 'vitest';
import { AUDIT_FLAGS_SCHEMA } from './audit.js';
import { AuditListQuery } from '../audit/query.js';

/** The schema as JSON (typebox's own marks are symbols and drop out), without descriptions, which check nothing. */
function rules(schema: unknown): string {
  return JSON.stringify(schema, (key, value: unknown) => (key === 'description' ? undefined : value));
}

describe('the admin CLI audit flags', () => {
  it('are checked by the same rules as GET /admin/v1/audit', () => {
    expect(rules(AUDIT_FLAGS_SCHEMA)).toBe(rules(AuditListQuery));
  });
});
