/**
 * Scan times (docs/api.md "Scan times"): when a file was made, as a client says on create, upload
 * or in a search's date range. Accepted as ISO 8601 with a time zone, stored and compared as UTC
 * with milliseconds (`2026-11-20T16:45:00.000Z`), so text order is time order in both stores.
 */
import { badRequest } from '../errors.js';

/** Date, time and a zone: `2026-11-20T17:45:00+01:00`, `2026-11-20T16:45:00.5Z`; seconds optional. */
const ISO_WITH_ZONE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:[Zz]|[+-](\d{2}):?(\d{2}))$/;

/** Whether the parts name a real day and time (Date.parse would roll 30 February over into March). */
function realParts(match: RegExpExecArray): boolean {
  const [year, month, day, hour, minute, second = 0, zoneHour = 0, zoneMinute = 0] = match.slice(1).map((part) => (part === undefined ? undefined : Number(part))) as number[];
  const date = new Date(Date.UTC(year!, month! - 1, day!));
  date.setUTCFullYear(year!);
  return date.getUTCMonth() === month! - 1 && date.getUTCDate() === day && hour! <= 23 && minute! <= 59 && second <= 59 && zoneHour <= 23 && zoneMinute <= 59;
}

/** The time as stored (UTC, milliseconds), or a 400 naming `field` and the rule. */
export function scanTime(value: string, field: string): string {
  const match = ISO_WITH_ZONE.exec(value.trim());
  const parsed = match && realParts(match) ? Date.parse(value.trim()) : Number.NaN;
  // Years 0–9999 only: beyond them an ISO string no longer sorts as the time it names.
  const year = Number.isFinite(parsed) ? new Date(parsed).getUTCFullYear() : Number.NaN;
  if (!(year >= 0 && year <= 9999)) {
    throw badRequest(`${field} must be an ISO 8601 date and time with a time zone, e.g. 2026-11-21T09:30:00Z`);
  }
  return new Date(parsed).toISOString();
}

/** A search's scan date range, checked: each end a scan time, the start before the end. */
export function scanRange(from: string | undefined, to: string | undefined): { scannedFrom?: string; scannedTo?: string } {
  const range: { scannedFrom?: string; scannedTo?: string } = {};
  if (from !== undefined) range.scannedFrom = scanTime(from, 'body/scannedFrom');
  if (to !== undefined) range.scannedTo = scanTime(to, 'body/scannedTo');
  if (range.scannedFrom !== undefined && range.scannedTo !== undefined && range.scannedFrom >= range.scannedTo) {
    throw badRequest('body/scannedFrom must be before body/scannedTo (the range includes scannedFrom and ends just before scannedTo)');
  }
  return range;
}
