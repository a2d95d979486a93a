import { useCallback, useEffect, useMemo, useRef, useState, type CSSProperties } from 'react';
import { visibleName } from '../../../../shared/names.js';
import type { FileView } from '../../../../shared/bridge.js';
import type { DocumentDto, PatientDto } from '../../../../shared/schemas.js';
import { SEARCH_DEFAULTS } from '../../../../shared/schemas.js';
import { useBridge, useBridgeEvent, useBridgeQuery } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { EmptyState } from '../../components/EmptyState.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { useFocusIfLost } from '../../components/useFocusIfLost.js';
import { PatientList } from '../../components/PatientList.js';
import { Splitter } from '../../components/Splitter.js';
import { buildFolderTree } from '../../documents/tree.js';
import { scanRangeOf } from '../../documents/scan-date.js';
import { isSeries, withSeries } from '../../documents/series.js';
import { formatCount } from '../../format.js';
import { DocumentDetails, type PreviewKind } from './DocumentDetails.js';
import { DocumentTable, type SortOrder } from './DocumentTable.js';
import { DocumentToolbar, type DocumentFilters } from './DocumentToolbar.js';
import { downloadDocument } from './download.js';
import { FolderTree } from './FolderTree.js';
import { PreviewDialog } from './PreviewDialog.js';
import { useDocumentWalk, type WalkQuery } from './useDocumentWalk.js';

const DEFAULT_SORT: SortOrder = { sortBy: SEARCH_DEFAULTS.sortBy, sortDirection: SEARCH_DEFAULTS.sortDirection };
const NO_FILTERS: DocumentFilters = { fileName: '', fileType: '', hasContent: false, scanDay: { kind: 'any' } };
/** The tree needs every document's path; it walks the whole record once in the default order. */
const TREE_QUERY: WalkQuery = { path: '/', ...DEFAULT_SORT };

export function PatientBrowserScreen({ initialPatientId }: { initialPatientId?: string | undefined }) {
  const client = useBridge();
  const [patient, setPatient] = useState<Pick<PatientDto, 'id' | 'name'> | null>(null);
  useEffect(() => {
    if (!initialPatientId) return;
    client.listPatients({ limit: 1000 }).then(
      (answer) => setPatient(answer.patients.find((entry) => entry.id === initialPatientId) ?? { id: initialPatientId, name: 'Patient' }),
      () => setPatient({ id: initialPatientId, name: 'Patient' }),
    );
  }, [client, initialPatientId]);

  const patientsPane = usePane('patients', 200);
  const treePane = usePane('tree', 236);
  const detailsPane = usePane('details', 340);
  const widths = {
    ...paneWidth('--patients-width', patientsPane),
    ...paneWidth('--tree-width', treePane),
    ...paneWidth('--details-width', detailsPane),
  } as CSSProperties;

  return (
    <div className="browser" style={widths}>
      {/* The screen's heading stays when a narrow window hides the patients column for the details. */}
      <h1 className="visually-hidden">Patient files</h1>
      <section className="browser-patients" aria-label="Patients">
        <h2 className="column-title">Patients</h2>
        <PatientList selectedId={patient?.id ?? null} onSelect={setPatient} />
        <Splitter label="Width of the patient list" width={patientsPane.width} min={150} max={520} onChange={patientsPane.resize} />
      </section>
      {patient ? (
        <PatientDocuments key={patient.id} patient={patient} treePane={treePane} detailsPane={detailsPane} />
      ) : (
        <div className="browser-empty">
          <EmptyState icon="patients" title="Choose a patient">
            Search by name, chart number or birth date on the left to see the patient’s folders and files.
          </EmptyState>
        </div>
      )}
    </div>
  );
}

/** How wide a folded column is: room for the button that unfolds it. */
const FOLDED_WIDTH = 44;

/** A side column as staff left it on this computer: its width (once chosen), and whether it is folded away. */
export interface Pane {
  width: number;
  /** Whether staff chose the width (else the screen's own default for the window size applies). */
  chosen: boolean;
  collapsed: boolean;
  resize: (width: number) => void;
  toggle: () => void;
}

/** A column's width, and whether it is folded, kept on this computer (localStorage) from one start to the next. */
function usePane(pane: string, fallback: number): Pane {
  const widthKey = `patient-docs:pane-width:${pane}`;
  const collapsedKey = `patient-docs:pane-collapsed:${pane}`;
  const [width, setWidth] = useState<number | null>(() => {
    const stored = Number(window.localStorage.getItem(widthKey));
    return Number.isFinite(stored) && stored > 0 ? stored : null;
  });
  const [collapsed, setCollapsed] = useState(() => window.localStorage.getItem(collapsedKey) === 'true');
  const fold = (next: boolean) => {
    setCollapsed(next);
    if (next) window.localStorage.setItem(collapsedKey, 'true');
    else window.localStorage.removeItem(collapsedKey);
  };
  return {
    width: width ?? fallback,
    chosen: width !== null,
    collapsed,
    // Pulling a folded column's handle unfolds it at the width pulled to.
    resize: (next) => {
      setWidth(next);
      window.localStorage.setItem(widthKey, String(next));
      if (collapsed) fold(false);
    },
    toggle: () => fold(!collapsed),
  };
}

/** The column's width as a CSS variable: folded, chosen, or left to the stylesheet's default. */
function paneWidth(variable: string, pane: Pane): Record<string, string> {
  if (pane.collapsed) return { [variable]: `${FOLDED_WIDTH}px` };
  return pane.chosen ? { [variable]: `${pane.width}px` } : {};
}

function PatientDocuments({ patient, treePane, detailsPane }: { patient: Pick<PatientDto, 'id' | 'name'>; treePane: Pane; detailsPane: Pane }) {
  const client = useBridge();
  const [folder, setFolder] = useState('/');
  const [filters, setFilters] = useState<DocumentFilters>(NO_FILTERS);
  const [sort, setSort] = useState<SortOrder>(DEFAULT_SORT);
  const [generation, setGeneration] = useState(0);
  const [selected, setSelected] = useState<DocumentDto | null>(null);
  const [preview, setPreview] = useState<PreviewKind | null>(null);
  const [downloading, setDownloading] = useState(false);
  const [downloadNote, setDownloadNote] = useState<string | null>(null);
  const [actionError, setActionError] = useState<BridgeError | null>(null);

  useBridgeEvent((event) => {
    if (event.type === 'documents-changed' && (event.patientId === null || event.patientId === patient.id)) setGeneration((value) => value + 1);
  });
  useRefreshOnSync(patient.id, () => setGeneration((value) => value + 1));

  const listQuery = useMemo<WalkQuery>(
    () => ({
      path: folder,
      ...sort,
      ...(filters.fileName.trim() ? { fileName: filters.fileName.trim() } : {}),
      ...(filters.fileType ? { fileType: filters.fileType } : {}),
      ...(filters.hasContent ? { hasContent: true } : {}),
      ...scanRangeOf(filters.scanDay),
    }),
    [folder, sort, filters],
  );
  const sharesTreeWalk = JSON.stringify(listQuery) === JSON.stringify(TREE_QUERY);
  const treeWalk = useDocumentWalk(patient.id, TREE_QUERY, generation);
  const ownListWalk = useDocumentWalk(patient.id, sharesTreeWalk ? null : listQuery, generation);
  const listWalk = sharesTreeWalk ? treeWalk : ownListWalk;
  const tree = useMemo(() => buildFolderTree(treeWalk.documents), [treeWalk.documents]);
  const entries = useMemo(() => withSeries(listWalk.documents, folder), [listWalk.documents, folder]);
  const knownTypes = useMemo(() => [...new Set(treeWalk.documents.map((document) => document.fileType))], [treeWalk.documents]);
  useWalkMarks(listWalk.documents.length > 0, treeWalk.done);
  // The open file's details follow the list when it is read again (content lost or restored meanwhile).
  useEffect(() => {
    setSelected((open) => (open ? (listWalk.documents.find((document) => document.id === open.id) ?? open) : open));
  }, [listWalk.documents]);

  const download = async (document: DocumentDto) => {
    setDownloading(true);
    setActionError(null);
    setDownloadNote(null);
    try {
      const savedTo = await downloadDocument(client, patient.id, document);
      setDownloadNote(savedTo ? `Saved to ${savedTo}` : null);
    } catch (failure) {
      setActionError(toBridgeError(failure));
    } finally {
      setDownloading(false);
    }
  };
  // One function for every row (rows are memoised; a new function per render would redraw them all).
  const downloadRef = useRef(download);
  downloadRef.current = download;
  const downloadRow = useCallback((document: DocumentDto) => void downloadRef.current(document), []);

  return (
    <>
      <section className={treePane.collapsed ? 'browser-tree collapsed' : 'browser-tree'} aria-label="Folders" id="folder-pane">
        {treePane.collapsed ? (
          <FoldedTree patientName={patient.name} onUnfold={treePane.toggle} />
        ) : (
          <>
            <div className="pane-header">
              <h2 className="column-title truncate">{visibleName(patient.name)}</h2>
              <FoldTreeButton onFold={treePane.toggle} />
            </div>
            <FolderTree root={tree} selectedPath={folder} onSelect={setFolder} loading={!treeWalk.done} />
          </>
        )}
        <Splitter label="Width of the folder tree" width={treePane.width} min={150} max={640} onChange={treePane.resize} collapsed={treePane.collapsed} onToggleCollapsed={treePane.toggle} controls="folder-pane" />
      </section>
      <section className="browser-files" aria-label="Files">
        <header className="browser-files-header">
          <div>
            <h2>{folder === '/' ? 'All files' : folder.slice(folder.lastIndexOf('/') + 1)}</h2>
            {/* Busy while a large record is read page by page, so the count is read out once, when it is complete. */}
            <p className="muted small" role="status" aria-live="polite" aria-busy={!listWalk.done} data-testid="document-count">
              {listWalk.done ? `${formatCount(listWalk.total)} ${listWalk.total === 1 ? 'file' : 'files'}` : `Loading… ${formatCount(listWalk.documents.length)}${listWalk.total ? ` of ${formatCount(listWalk.total)}` : ''}`}
              {folder !== '/' ? ` in ${folder}` : ''}
            </p>
          </div>
          <DocumentToolbar filters={filters} onChange={setFilters} knownTypes={knownTypes} />
        </header>
        {listWalk.error ? <ErrorNotice error={listWalk.error} title="The files cannot be listed" /> : null}
        {actionError ? <ErrorNotice error={actionError} title="The file cannot be downloaded" /> : null}
        {listWalk.done && listWalk.total === 0 && !listWalk.error ? (
          <EmptyState icon="file" title={!filtering(filters) && folder === '/' ? 'No files for this patient yet' : 'No file matches'}>
            {!filtering(filters) && folder === '/' ? 'Files appear here once a synced scan folder uploads them.' : 'Try another name, type or date, or clear the filters.'}
          </EmptyState>
        ) : (
          <DocumentTable documents={entries} sort={sort} onSort={setSort} onOpen={(entry) => (isSeries(entry) ? setFolder(entry.path) : setSelected(entry))} onDownload={downloadRow} selectedId={selected?.id ?? null} />
        )}
        {/* The details' handle, on the files' right edge (the details panel scrolls; a handle in it would scroll away). */}
        {selected ? (
          <Splitter
            label="Width of the details"
            edge="left"
            width={detailsPane.width}
            min={240}
            max={640}
            onChange={detailsPane.resize}
            collapsed={detailsPane.collapsed}
            onToggleCollapsed={detailsPane.toggle}
            controls="details-pane"
          />
        ) : null}
      </section>
      {selected ? (
        <DocumentDetails
          patientId={patient.id}
          document={selected}
          refreshKey={generation}
          onStale={() => setGeneration((value) => value + 1)}
          onClose={() => {
            setSelected(null);
            // Back to the file list, on the row that was opened (it stays the active row).
            window.document.querySelector<HTMLElement>('.document-rows')?.focus();
          }}
          onDownload={() => void download(selected)}
          onPreview={setPreview}
          downloading={downloading}
          downloadNote={downloadNote}
          collapsed={detailsPane.collapsed}
          onToggleCollapsed={detailsPane.toggle}
        />
      ) : null}
      {selected && preview ? <PreviewDialog patientId={patient.id} document={selected} kind={preview} onClose={() => setPreview(null)} /> : null}
    </>
  );
}

/** The button that folds the folder column away (it takes the focus back when the column unfolds by its strip's button). */
function FoldTreeButton({ onFold }: { onFold: () => void }) {
  const button = useRef<HTMLButtonElement>(null);
  useFocusIfLost(button);
  return (
    <button ref={button} type="button" className="icon-button pane-toggle" onClick={onFold} aria-label="Hide folders" title="Hide the folders (more room for the files)">
      <Icon name="chevronLeft" />
    </button>
  );
}

/** The folder column folded to a strip: the button that unfolds it (the patient's name stays the column's heading). */
function FoldedTree({ patientName, onUnfold }: { patientName: string; onUnfold: () => void }) {
  const unfold = useRef<HTMLButtonElement>(null);
  useFocusIfLost(unfold);
  return (
    <>
      <h2 className="visually-hidden">{visibleName(patientName)}</h2>
      <button ref={unfold} type="button" className="icon-button pane-toggle" onClick={onUnfold} aria-label="Show folders" title="Show the folders">
        <Icon name="chevronRight" />
      </button>
      <span className="pane-rail-label" aria-hidden="true">
        Folders
      </span>
    </>
  );
}

/** How long after a file of this computer is synced the list is read again (a scan brings several at once). */
const SYNC_REFRESH_DELAY_MS = 1500;

/**
 * Whether a file's news changes what the server lists: it was verified there, or the re-check of
 * synced files found it lost or gone there (failed, or queued to go up again from the folder).
 */
function changesTheList(file: FileView): boolean {
  return file.state === 'synced' || (file.lostAt !== null && (file.state === 'failed' || file.state === 'queued'));
}

/**
 * The server tells webhook listeners about new documents; a computer without a reachable listener
 * still knows what it uploaded itself, and what the re-check found missing: when a file of a folder
 * synced to this patient is verified, or found lost on the server, the patient's documents are read
 * again (once for a burst of files), and so is the open file's details panel.
 */
function useRefreshOnSync(patientId: string, refresh: () => void): void {
  const pairs = useBridgeQuery((client) => client.listPairs(), []);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => {
    if (timer.current) clearTimeout(timer.current);
  }, []);
  useBridgeEvent((event) => {
    if (event.type === 'pairs') pairs.setData(event.pairs);
    if (event.type !== 'files' || !event.files.some(changesTheList)) return;
    if (pairs.data?.find((pair) => pair.id === event.pairId)?.patientId !== patientId) return;
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      timer.current = null;
      refresh();
    }, SYNC_REFRESH_DELAY_MS);
  });
}

/** Whether any filter narrows the list (by value: a filter typed and cleared again narrows nothing). */
function filtering(filters: DocumentFilters): boolean {
  return filters.fileName.trim() !== '' || filters.fileType !== '' || filters.hasContent || filters.scanDay.kind !== 'any';
}

/** Marks for the benchmark (bench/ui.mjs): when the first rows and the complete tree are on screen. */
function useWalkMarks(hasRows: boolean, treeDone: boolean): void {
  useEffect(() => {
    if (hasRows && performance.getEntriesByName('patient-docs:first-rows').length === 0) performance.mark('patient-docs:first-rows');
  }, [hasRows]);
  useEffect(() => {
    if (treeDone && performance.getEntriesByName('patient-docs:tree-complete').length === 0) performance.mark('patient-docs:tree-complete');
  }, [treeDone]);
}
