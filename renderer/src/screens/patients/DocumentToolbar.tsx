import { Icon } from '../../components/Icon.js';
import { describeType } from '../../documents/file-types.js';
import type { ScanDay } from '../../documents/scan-date.js';

export interface DocumentFilters {
  fileName: string;
  fileType: string;
  hasContent: boolean;
  /** When the files were scanned (a document no workstation dated counts by its upload). */
  scanDay: ScanDay;
}

const SCAN_DAYS: Array<{ kind: ScanDay['kind']; label: string }> = [
  { kind: 'any', label: 'Any date' },
  { kind: 'today', label: 'Scanned today' },
  { kind: 'yesterday', label: 'Scanned yesterday' },
  { kind: 'week', label: 'Last 7 days' },
  { kind: 'day', label: 'On a day…' },
];

/** Today as the date input names it (yyyy-mm-dd, this computer's calendar). */
function localToday(): string {
  const now = new Date();
  return `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, '0')}-${String(now.getDate()).padStart(2, '0')}`;
}

function scanDayOf(kind: ScanDay['kind'], current: ScanDay): ScanDay {
  if (kind === 'day') return { kind, day: current.kind === 'day' ? current.day : localToday() };
  return { kind };
}

const COMMON_TYPES = ['STL', 'PLY', 'OBJ', 'PDF', 'DCM', 'JPG', 'PNG'];

export function DocumentToolbar({ filters, onChange, knownTypes }: { filters: DocumentFilters; onChange: (filters: DocumentFilters) => void; knownTypes: string[] }) {
  const types = [...new Set([...COMMON_TYPES, ...knownTypes])].sort();
  return (
    <div className="toolbar" role="search" aria-label="Filter files">
      <div className="search-input">
        <Icon name="search" size={16} />
        <label htmlFor="document-name-filter" className="visually-hidden">
          Filter by file name
        </label>
        <input id="document-name-filter" type="search" placeholder="Filter by name" value={filters.fileName} onChange={(event) => onChange({ ...filters, fileName: event.target.value })} />
      </div>
      <label className="select-field">
        <span className="visually-hidden">File type</span>
        <select value={filters.fileType} onChange={(event) => onChange({ ...filters, fileType: event.target.value })} aria-label="File type">
          <option value="">All types</option>
          {types.map((type) => (
            <option key={type} value={type}>
              {describeType(type)}
            </option>
          ))}
        </select>
      </label>
      <span className="date-filter">
        <label className="select-field">
          <span className="visually-hidden">Scan date</span>
          <select value={filters.scanDay.kind} onChange={(event) => onChange({ ...filters, scanDay: scanDayOf(event.target.value as ScanDay['kind'], filters.scanDay) })} aria-label="Scan date">
            {SCAN_DAYS.map((option) => (
              <option key={option.kind} value={option.kind}>
                {option.label}
              </option>
            ))}
          </select>
        </label>
        {filters.scanDay.kind === 'day' ? (
          <input
            type="date"
            aria-label="Day scanned"
            value={filters.scanDay.day}
            max={localToday()}
            onChange={(event) => {
              // Cleared: back to any date, rather than a filter that names no day.
              onChange({ ...filters, scanDay: event.target.value ? { kind: 'day', day: event.target.value } : { kind: 'any' } });
            }}
          />
        ) : null}
      </span>
      <label className="checkbox-field">
        <input type="checkbox" checked={filters.hasContent} onChange={(event) => onChange({ ...filters, hasContent: event.target.checked })} />
        Only uploaded files
      </label>
    </div>
  );
}
