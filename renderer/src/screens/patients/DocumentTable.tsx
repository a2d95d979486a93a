import { memo, useState } from 'react';
import { visibleName } from '../../../../shared/names.js';
import type { DocumentDto, SortField } from '../../../../shared/schemas.js';
import { Icon } from '../../components/Icon.js';
import { MiddleName } from '../../components/MiddleName.js';
import { VirtualList } from '../../components/VirtualList.js';
import { fileIcon } from '../../documents/file-types.js';
import { formatBytes, formatCount, formatDateTime, formatShortDate } from '../../format.js';
import { isSeries, type ListEntry, type SeriesEntry } from '../../documents/series.js';
import { scanDateOf } from '../../documents/scan-date.js';

export interface SortOrder {
  sortBy: SortField;
  sortDirection: 'ASC' | 'DESC';
}

const ROW_HEIGHT = 56;

const COLUMNS: Array<{ field: SortField | null; label: string; className: string }> = [
  { field: 'fileName', label: 'Name', className: 'col-name' },
  { field: 'fileType', label: 'Type', className: 'col-type' },
  { field: 'fileSize', label: 'Size', className: 'col-size' },
  { field: 'scannedAt', label: 'Scanned', className: 'col-scanned' },
  { field: null, label: 'Content', className: 'col-status' },
  { field: null, label: '', className: 'col-actions' },
];

export function DocumentTable({ documents, sort, onSort, onOpen, onDownload, selectedId }: { documents: ListEntry[]; sort: SortOrder; onSort: (sort: SortOrder) => void; onOpen: (entry: ListEntry) => void; onDownload: (document: DocumentDto) => void; selectedId: string | null }) {
  const [activeIndex, setActiveIndex] = useState(-1);
  return (
    <div className="document-table">
      <div className="document-header" role="group" aria-label="Sort files">
        {COLUMNS.map((column) => (
          <div key={column.label || 'actions'} className={`document-cell ${column.className}`}>
            {column.field ? (
              <button
                type="button"
                className={column.field === sort.sortBy ? 'sort-button active' : 'sort-button'}
                onClick={() => onSort({ sortBy: column.field!, sortDirection: column.field === sort.sortBy && sort.sortDirection === 'ASC' ? 'DESC' : column.field === sort.sortBy ? 'ASC' : column.field === 'scannedAt' || column.field === 'fileSize' ? 'DESC' : 'ASC' })}
              >
                {column.label}
                {/* aria-sort belongs to a table's column header; this header is a row of buttons, so the order is said in the button's name. */}
                {column.field === sort.sortBy ? <span className="visually-hidden">{sort.sortDirection === 'ASC' ? ', sorted ascending' : ', sorted descending'}</span> : null}
                {column.field === sort.sortBy ? <Icon name={sort.sortDirection === 'ASC' ? 'sortAscending' : 'sortDescending'} size={14} /> : null}
              </button>
            ) : (
              <span className="column-label">{column.label}</span>
            )}
          </div>
        ))}
      </div>
      <VirtualList
        items={documents}
        rowHeight={ROW_HEIGHT}
        label="Files"
        className="document-rows"
        getKey={(document) => document.id}
        activeIndex={activeIndex}
        onActiveIndexChange={setActiveIndex}
        onActivate={onOpen}
        renderRow={(entry) => (isSeries(entry) ? <SeriesRow series={entry} /> : <DocumentRow document={entry} selected={entry.id === selectedId} onDownload={onDownload} />)}
      />
    </div>
  );
}

/** A DICOM series as one row: opening it shows its folder, with the slices in order. */
const SeriesRow = memo(function SeriesRow({ series }: { series: SeriesEntry }) {
  const folderName = series.path.slice(series.path.lastIndexOf('/') + 1) || series.path;
  return (
    <div className="document-row series-row" data-series={series.path}>
      <div className="document-cell col-name">
        <span className="thumbnail thumbnail-placeholder" style={{ width: 40, height: 40 }} aria-hidden="true">
          <Icon name="image" size={20} />
        </span>
        <span className="document-name">
          <span className="truncate strong">
            DICOM series · {formatCount(series.slices)} slices
          </span>
          <MiddleName name={series.path} className="muted small" />
        </span>
      </div>
      <div className="document-cell col-type">
        <span className="type-chip">DCM</span>
      </div>
      <div className="document-cell col-size tabular">{formatBytes(series.fileSize)}</div>
      <ScannedCell document={series} />
      <div className="document-cell col-status">
        <span className="status-text muted" title={`Open ${folderName} to see the slices`}>
          <Icon name="folderOpen" size={14} /> Open series
        </span>
      </div>
      <div className="document-cell col-actions" />
    </div>
  );
});

/** Memoised: scrolling re-renders only rows that enter the window. */
const DocumentRow = memo(function DocumentRow({ document, selected, onDownload }: { document: DocumentDto; selected: boolean; onDownload: (document: DocumentDto) => void }) {
  return (
    <div className={selected ? 'document-row selected' : 'document-row'} data-document={document.fileName}>
      <div className="document-cell col-name">
        <Thumbnail document={document} />
        <span className="document-name">
          <MiddleName name={document.fileName} className="strong" />
          <span className="truncate muted small">{visibleName(document.path)}</span>
        </span>
      </div>
      <div className="document-cell col-type">
        <span className="type-chip">{document.fileType}</span>
      </div>
      <div className="document-cell col-size tabular">{formatBytes(document.fileSize)}</div>
      <ScannedCell document={document} />
      <div className="document-cell col-status">
        {document.hasContent ? (
          <span className="status-text tone-text-success">
            <Icon name="checkCircle" size={14} /> Uploaded
          </span>
        ) : document.version > 0 ? (
          // Had content once: its stored file was lost on the server (admin verify --mark-lost).
          <span className="status-text tone-text-danger" title="The server lost this file. A workstation that still has the scan uploads it again by itself.">
            <Icon name="alert" size={14} /> Lost on the server
          </span>
        ) : (
          <span className="status-text muted">
            <Icon name="clock" size={14} /> No content yet
          </span>
        )}
      </div>
      <div className="document-cell col-actions">
        {document.hasContent ? (
          // A shortcut for the mouse only: a row is an option, which may not hold a control of its
          // own. By keyboard (and to assistive technology) Enter on the row opens its details, whose
          // Download button does the same.
          <span
            className="icon-button"
            aria-hidden="true"
            title="Download"
            data-action="download"
            onClick={(event) => {
              event.stopPropagation();
              onDownload(document);
            }}
          >
            <Icon name="download" size={18} />
          </span>
        ) : null}
      </div>
    </div>
  );
});

/**
 * When the file was scanned (its time on the scanner PC); a document no workstation dated shows its
 * upload time, said to be one, so staff never take an upload for a scan.
 */
function ScannedCell({ document }: { document: Pick<DocumentDto, 'scannedAt' | 'lastModifiedAt'> }) {
  const { at, uploaded } = scanDateOf(document);
  return (
    <div className={uploaded ? 'document-cell col-scanned tabular uploaded' : 'document-cell col-scanned tabular'} title={uploaded ? `No scan time recorded; uploaded ${formatDateTime(at)}` : `Scanned ${formatDateTime(at)}`}>
      <span className="date-long">{formatDateTime(at)}</span>
      <span className="date-short">{formatShortDate(at)}</span>
      {uploaded ? <span className="date-source muted small">upload time</span> : null}
    </div>
  );
}

export function Thumbnail({ document, size = 40 }: { document: DocumentDto; size?: number }) {
  const [failed, setFailed] = useState(false);
  if (document.thumbnailDownloadUri && !failed) {
    return <img className="thumbnail" src={document.thumbnailDownloadUri} alt="" width={size} height={size} loading="lazy" decoding="async" onError={() => setFailed(true)} />;
  }
  return (
    <span className="thumbnail thumbnail-placeholder" style={{ width: size, height: size }} aria-hidden="true">
      <Icon name={fileIcon(document.fileType)} size={Math.round(size * 0.5)} />
    </span>
  );
}
