import { Icon } from '../../components/Icon.js';
import { describeType } from '../../documents/file-types.js';

export interface DocumentFilters {
  fileName: string;
  fileType: string;
  hasContent: boolean;
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
      <label className="checkbox-field">
        <input type="checkbox" checked={filters.hasContent} onChange={(event) => onChange({ ...filters, hasContent: event.target.checked })} />
        Only uploaded files
      </label>
    </div>
  );
}
