/** Sizes, rates, durations and dates in the user's locale (Intl), so nothing is hand-formatted. */

const BYTE_UNITS = ['byte', 'kilobyte', 'megabyte', 'gigabyte', 'terabyte'] as const;

const numberFormats = new Map<string, Intl.NumberFormat>();
function unitFormat(unit: string, maximumFractionDigits: number, unitDisplay: 'short' | 'long' = 'short'): Intl.NumberFormat {
  const key = `${unit}:${maximumFractionDigits}:${unitDisplay}`;
  let format = numberFormats.get(key);
  if (!format) {
    format = new Intl.NumberFormat(undefined, { style: 'unit', unit, unitDisplay, maximumFractionDigits });
    numberFormats.set(key, format);
  }
  return format;
}

/** Decimal units (1 MB = 1,000,000 bytes), as operating systems show file sizes to clinic staff. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  let value = Math.max(0, bytes);
  let unitIndex = 0;
  while (value >= 1000 && unitIndex < BYTE_UNITS.length - 1) {
    value /= 1000;
    unitIndex += 1;
  }
  // Plain bytes spelled out ("717 bytes"): the short form is not pluralised in every locale.
  return unitIndex === 0 ? unitFormat('byte', 0, 'long').format(value) : unitFormat(BYTE_UNITS[unitIndex]!, value >= 100 ? 0 : 1).format(value);
}

export function formatRate(bytesPerSecond: number): string {
  let value = Math.max(0, bytesPerSecond);
  let unitIndex = 0;
  while (value >= 1000 && unitIndex < BYTE_UNITS.length - 1) {
    value /= 1000;
    unitIndex += 1;
  }
  return unitFormat(`${BYTE_UNITS[unitIndex]!}-per-second`, value >= 100 ? 0 : 1).format(value);
}

/** "about 3 minutes left" style durations, rounded the way a person would say them. */
export function formatDuration(seconds: number): string {
  if (seconds < 60) return unitFormat('second', 0, 'long').format(Math.max(1, Math.round(seconds)));
  if (seconds < 3600) return unitFormat('minute', 0, 'long').format(Math.round(seconds / 60));
  return unitFormat('hour', 1, 'long').format(seconds / 3600);
}

export function formatCount(value: number): string {
  return new Intl.NumberFormat().format(value);
}

const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const timeFormat = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

export function formatDateTime(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? '—' : dateTimeFormat.format(date);
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });

/** A date alone; a calendar day without a time ("1980-03-12") is shown as that day wherever the computer is. */
export function formatDate(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return typeof value === 'string' ? value : '—';
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) ? dayFormat.format(date) : dateFormat.format(date);
}

const shortDateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short' });

/** A date in its shortest form ("12/03/2026"), for a narrow column whose tooltip has the time. */
export function formatShortDate(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? '—' : shortDateFormat.format(date);
}

export function formatTime(value: number): string {
  return timeFormat.format(new Date(value));
}

const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

export function formatRelative(value: number, now = Date.now()): string {
  const seconds = Math.round((value - now) / 1000);
  const absolute = Math.abs(seconds);
  if (absolute < 45) return relativeFormat.format(0, 'second');
  if (absolute < 3600) return relativeFormat.format(Math.round(seconds / 60), 'minute');
  if (absolute < 86_400) return relativeFormat.format(Math.round(seconds / 3600), 'hour');
  return relativeFormat.format(Math.round(seconds / 86_400), 'day');
}

export function percent(done: number, total: number): number {
  if (total <= 0) return 0;
  return Math.min(100, Math.max(0, (done / total) * 100));
}

/** "1 file", "2 files", "1,200 files". */
export function formatFileCount(count: number): string {
  return `${formatCount(count)} ${count === 1 ? 'file' : 'files'}`;
}
