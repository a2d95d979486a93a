import { lazy, Suspense, useEffect, useState } from 'react';
import type { DocumentDto } from '../../../../shared/schemas.js';
import { useBridge } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
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
        {url && kind === 'pdf' ? <iframe className="pdf-frame" src={`${url}&disposition=inline`} title={`Preview of ${document.fileName}`} /> : null}
      </div>
    </Dialog>
  );
}
