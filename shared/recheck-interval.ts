/**
 * How often synced files are checked against the server again (electron/sync/engine/recheck.ts): every
 * 4 hours unless IT says otherwise; from 15 minutes (each check is one search per 30 synced files)
 * to 7 days, or 0 for never. A module of its own, without dependencies: the settings file's schema
 * uses it, and the sync CLI's `status` loads that without the bridge contract.
 */
export const RECHECK_MINUTES = { default: 240, min: 15, max: 7 * 24 * 60 } as const;

/** What is wrong with a re-check interval, in plain words, or null when it is allowed. */
export function recheckMinutesProblem(minutes: number): string | null {
  if (Number.isInteger(minutes) && (minutes === 0 || (minutes >= RECHECK_MINUTES.min && minutes <= RECHECK_MINUTES.max))) return null;
  return `Synced files are checked on the server every ${RECHECK_MINUTES.min} minutes at the most and every 7 days (${RECHECK_MINUTES.max} minutes) at the least, or never (0); ${String(minutes)} minutes is not allowed.`;
}
