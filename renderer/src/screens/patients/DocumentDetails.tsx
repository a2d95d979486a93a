import { useEffect, useRef, useState, type RefObject } from 'react';
import { visibleName } from '../../../../shared/names.js';
import type { DocumentDto } from '../../../../shared/schemas.js';
import { Icon } from '../../components/Icon.js';
import { useFocusIfLost } from '../../components/useFocusIfLost.js';
import { describeType, isModelType } from '../../documents/file-types.js';
import { formatBytes, formatDateTime } from '../../format.js';
import { Thumbnail } from './DocumentTable.js';
import { VersionHistory } from './VersionHistory.js';

export type PreviewKind = 'model' | 'pdf';

export function previewKindOf(document: DocumentDto): PreviewKind | null {
  if (!document.hasContent) return null;
  if (isModelType(document.fileType)) return 'model';
  if (document.fileType === 'PDF') return 'pdf';
  return null;
}

interface DetailsProps {
  patientId: string;
  document: DocumentDto;
  /** Changes when the patient's files were read again: the versions are read again with them. */
  refreshKey: number;
  /** The versions show the file's content other than the list did (lost or restored since): read the list again. */
  onStale: () => void;
  onClose: () => void;
  onDownload: () => void;
  onPreview: (kind: PreviewKind) => void;
  downloading: boolean;
  downloadNote: string | null;
}

/** The side panel for one file: what it is, whether its content arrived, and what can be done with it. */
export function DocumentDetails({
  collapsed = false,
  onToggleCollapsed,
  ...details
}: DetailsProps & {
  /** Folded to a strip beside the files (kept on this computer); a small window, where the panel covers the files, always shows it whole. */
  collapsed?: boolean;
  onToggleCollapsed?: () => void;
}) {
  const covering = useMatchMedia(COVERING);
  if (collapsed && onToggleCollapsed && !covering) return <FoldedDetails document={details.document} onUnfold={onToggleCollapsed} onClose={details.onClose} />;
  return <OpenDetails {...details} onFold={covering ? undefined : onToggleCollapsed} />;
}

/** The details folded to a strip: the file's name, read downwards, and the button that unfolds them. */
function FoldedDetails({ document, onUnfold, onClose }: { document: DocumentDto; onUnfold: () => void; onClose: () => void }) {
  const name = visibleName(document.fileName);
  const unfold = useRef<HTMLButtonElement>(null);
  useFocusIfLost(unfold);
  return (
    <aside
      className="details-panel collapsed"
      id="details-pane"
      aria-label={`Details of ${name}`}
      onKeyDown={(event) => {
        if (event.key === 'Escape') {
          event.preventDefault();
          onClose();
        }
      }}
    >
      <button ref={unfold} type="button" className="icon-button pane-toggle" onClick={onUnfold} aria-label="Show details" title={`Show the details of ${name}`}>
        <Icon name="chevronLeft" />
      </button>
      <span className="pane-rail-label" aria-hidden="true" title={name}>
        {name}
      </span>
    </aside>
  );
}

/** Whether a media query holds, following changes (a window resized). */
function useMatchMedia(query: string): boolean {
  const [matches, setMatches] = useState(() => window.matchMedia(query).matches);
  useEffect(() => {
    const list = window.matchMedia(query);
    const change = () => setMatches(list.matches);
    change();
    list.addEventListener('change', change);
    return () => list.removeEventListener('change', change);
  }, [query]);
  return matches;
}

function OpenDetails({
  patientId,
  document,
  refreshKey,
  onStale,
  onClose,
  onDownload,
  onPreview,
  downloading,
  downloadNote,
  onFold,
}: DetailsProps & {
  onFold: (() => void) | undefined;
}) {
  const preview = previewKindOf(document);
  // The focus comes to the panel when it opens on a file (Enter on a row), so its actions are the next
  // Tab away; Escape or "Close details" takes it back to the list.
  const headingRef = useRef<HTMLHeadingElement>(null);
  useEffect(() => headingRef.current?.focus(), [document.id]);
  const panelRef = useRef<HTMLElement>(null);
  useCoveredInert(panelRef);
  return (
    <aside
      ref={panelRef}
      className="details-panel"
      id="details-pane"
      aria-label={`Details of ${visibleName(document.fileName)}`}
      onKeyDown={(event) => {
        if (event.key === 'Escape') {
          event.preventDefault();
          onClose();
        }
      }}
    >
      <header className="details-header">
        <h2 ref={headingRef} tabIndex={-1} className="details-title break" title={visibleName(document.fileName)}>
          {visibleName(document.fileName)}
        </h2>
        <span className="details-header-actions">
          {onFold ? (
            <button type="button" className="icon-button pane-toggle" onClick={onFold} aria-label="Hide details" title="Fold the details to the side (more room for the files)">
              <Icon name="chevronRight" />
            </button>
          ) : null}
          <button type="button" className="icon-button" onClick={onClose} aria-label="Close details">
            <Icon name="close" />
          </button>
        </span>
      </header>
      <div className="details-preview">
        <Thumbnail document={document} size={176} />
      </div>
      <div className="details-actions">
        {preview === 'model' ? (
          <button type="button" className="button primary" onClick={() => onPreview('model')}>
            <Icon name="cube" size={16} /> View in 3D
          </button>
        ) : null}
        {preview === 'pdf' ? (
          <button type="button" className="button primary" onClick={() => onPreview('pdf')}>
            <Icon name="eye" size={16} /> Preview
          </button>
        ) : null}
        {document.hasContent ? (
          // aria-disabled, not disabled: a button that becomes disabled loses the focus (to the page),
          // and the keyboard user pressing Download would have to start again from the top.
          <button type="button" className="button" onClick={() => !downloading && onDownload()} aria-disabled={downloading}>
            <Icon name="download" size={16} /> {downloading ? 'Downloading…' : 'Download'}
          </button>
        ) : null}
      </div>
      {downloadNote ? <p className="small muted">{downloadNote}</p> : null}
      <dl className="details-list">
        <dt>Type</dt>
        <dd>{describeType(document.fileType)}</dd>
        <dt>Folder</dt>
        <dd className="break">{document.path}</dd>
        <dt>Size</dt>
        <dd>{formatBytes(document.fileSize)}</dd>
        <dt>Scanned</dt>
        <dd data-testid="details-scanned">{document.scannedAt ? formatDateTime(document.scannedAt) : <span className="muted">Not recorded</span>}</dd>
        <dt>Uploaded</dt>
        <dd>{document.hasContent || document.version > 0 ? formatDateTime(document.lastModifiedAt) : <span className="muted">Not yet</span>}</dd>
        <dt>Added</dt>
        <dd>{formatDateTime(document.createdAt)}</dd>
        <dt>Content</dt>
        <dd>
          {document.hasContent
            ? `Uploaded${document.version > 1 ? ` (version ${document.version})` : ''}`
            : document.version > 0
              ? 'Lost on the server. A workstation that still has the scan uploads it again by itself; if none does, ask IT to restore it from a backup.'
              : 'Not uploaded yet'}
        </dd>
        {document.sha256 ? (
          <>
            <dt>Checksum</dt>
            <dd className="mono break small" title="SHA-256 of the stored content">
              {document.sha256}
            </dd>
          </>
        ) : null}
      </dl>
      {document.version > 0 ? <VersionHistory patientId={patientId} document={document} refreshKey={refreshKey} onStale={onStale} /> : null}
    </aside>
  );
}

/** Where the details cover the whole window (styles.css, max-width 900px), what they cover. */
const COVERING = '(max-width: 900px)';

/**
 * While the panel covers the window, what is under it is inert: Tab cannot wander onto controls no
 * one can see, and a screen reader reads the panel alone — as a dialog would, until Escape or Close.
 */
function useCoveredInert(panelRef: RefObject<HTMLElement | null>): void {
  useEffect(() => {
    const panel = panelRef.current;
    if (!panel) return;
    const query = window.matchMedia(COVERING);
    let covered: HTMLElement[] = [];
    const release = () => {
      for (const element of covered) element.inert = false;
      covered = [];
    };
    const apply = () => {
      release();
      if (!query.matches) return;
      // Every sibling of the panel and of each of its ancestors, up to the page's root.
      for (let node: HTMLElement | null = panel; node && node.parentElement && node !== window.document.body; node = node.parentElement) {
        for (const sibling of node.parentElement.children) {
          // The sync announcements stay audible (an inert live region is silent).
          if (sibling !== node && sibling instanceof HTMLElement && !sibling.inert && !sibling.hasAttribute('aria-live')) {
            sibling.inert = true;
            covered.push(sibling);
          }
        }
      }
    };
    apply();
    query.addEventListener('change', apply);
    return () => {
      query.removeEventListener('change', apply);
      release();
    };
  }, [panelRef]);
}
