import { lazy, Suspense, useEffect, useState } from 'react';
import type { DocumentDto } from '../../../../shared/schemas.js';
import { useBridge } from '../../bridge/context.js';
import { BridgeError, toBridgeError } from '../../bridge/errors.js';
import { Dialog } from '../../components/Dialog.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { isModelType } from '../../documents/file-types.js';
import type { PreviewKind } from './DocumentDetails.js';
import { freshDocument } from './download.js';

// three.js is large: load it only when someone opens a model.
const ModelViewer = lazy(() => import('../../viewer/ModelViewer.js'));

export function PreviewDialog({ patientId, document, kind, onClose }: { patientId: string; document: DocumentDto; kind: PreviewKind; onClose: () => void }) {
  const client = useBridge();
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState<BridgeError | null>(null);
  useEffect(() => {
    let current = true;
    freshDocument(client, patientId, document.id).then(
      (fresh) => current && setUrl(fresh.storageDownloadUri),
      (failure: unknown) => current && setError(toBridgeError(failure)),
    );
    return () => {
      current = false;
    };
  }, [client, patientId, document.id]);

  return (
    <Dialog title={document.fileName} open onClose={onClose} wide>
      <div className="preview-body">
        {error ? <ErrorNotice error={error} /> : null}
        {url && kind === 'model' && isModelType(document.fileType) ? (
          <Suspense fallback={<div className="model-overlay">Loading the 3D viewer…</div>}>
            <ModelViewer url={url} fileType={document.fileType} fileName={document.fileName} />
          </Suspense>
        ) : null}
        {url && kind === 'pdf' ? <PdfFrame url={url} fileName={document.fileName} onError={setError} /> : null}
      </div>
    </Dialog>
  );
}

/**
 * The PDF preview: the signed link is always a download (the server never shows a stored file on
 * its own origin, and refuses a link with anything added), so the bytes are read here and shown
 * from a blob typed as PDF: only the browser's PDF viewer ever renders them.
 */
function PdfFrame({ url, fileName, onError }: { url: string; fileName: string; onError: (error: BridgeError) => void }) {
  const [blobUrl, setBlobUrl] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    let created: string | null = null;
    fetch(url)
      .then(async (response) => {
        if (!response.ok) throw new BridgeError('UNAVAILABLE', `The file could not be read from the server (HTTP ${response.status}).`);
        const bytes = await response.arrayBuffer();
        if (!current) return;
        created = URL.createObjectURL(new Blob([bytes], { type: 'application/pdf' }));
        setBlobUrl(created);
      })
      .catch((failure: unknown) => current && onError(toBridgeError(failure)));
    return () => {
      current = false;
      if (created) URL.revokeObjectURL(created);
    };
  }, [url, onError]);
  return blobUrl ? <iframe className="pdf-frame" src={blobUrl} title={`Preview of ${fileName}`} /> : <div className="pdf-frame pdf-loading" role="status">Loading the preview…</div>;
}
