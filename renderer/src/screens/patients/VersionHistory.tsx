import { useEffect, useRef, useState } from 'react';
import type { DocumentDto, DocumentVersionDto } from '../../../../shared/schemas.js';
import { useBridge, useBridgeQuery } from '../../bridge/context.js';
import { BridgeError, toBridgeError } from '../../bridge/errors.js';
import { Icon } from '../../components/Icon.js';
import { formatBytes, formatDateTime } from '../../format.js';
import { versionFileName } from '../../../../shared/names.js';
import { saveBlob } from './download.js';

/**
 * Every content version of a file, newest first. A version whose stored file IT marked lost on the
 * server says so and since when, and offers no download (its link could only fail); once IT
 * restores it from a backup it looks like any other version again.
 */
export function VersionHistory({ patientId, document, refreshKey, onStale }: { patientId: string; document: DocumentDto; refreshKey: number; onStale: () => void }) {
  const { id: documentId, fileName } = document;
  const client = useBridge();
  const versions = useBridgeQuery((bridge) => bridge.documentVersions(patientId, documentId), [patientId, documentId, refreshKey]);
  const [note, setNote] = useState<{ text: string; failed: boolean } | null>(null);
  const [downloading, setDownloading] = useState<number | null>(null);
  // The content the versions call current, against the one the list showed: a file lost or restored
  // since the list was read is read again (once per difference, so a lasting one cannot loop).
  const shown = document.hasContent ? document.version : null;
  const current = versions.data ? (versions.data.find((version) => version.current)?.version ?? null) : shown;
  const askedFor = useRef<string | null>(null);
  useEffect(() => {
    const difference = `${documentId}:${shown}:${current}`;
    if (current === shown || askedFor.current === difference) return;
    askedFor.current = difference;
    onStale();
  }, [documentId, shown, current, onStale]);
  // An engine that cannot list versions (an older app) shows the panel as it was: nothing to say.
  if (versions.error?.code === 'UNAVAILABLE') return null;
  const list = versions.data ?? [];
  if (!versions.error && list.length === 0) return null;

  const download = async (version: DocumentVersionDto) => {
    if (!version.storageDownloadUri || downloading !== null) return;
    setDownloading(version.version);
    setNote(null);
    try {
      // Desktop: a save dialog, and the engine streams the bytes to the file. Headless: null.
      const saved = await client.saveDocumentVersion(patientId, documentId, version.version).catch((error: unknown) => {
        if (error instanceof BridgeError && error.code === 'UNAVAILABLE') return null;
        throw error;
      });
      if (saved !== null) {
        setNote({ text: `Version ${version.version} saved to ${saved}`, failed: false });
        return;
      }
      const response = await fetch(version.storageDownloadUri);
      if (!response.ok) throw new BridgeError('NOT_FOUND', `The server answered ${response.status}.`);
      saveBlob(await response.blob(), versionFileName(fileName, version.version, version.current));
    } catch (failure) {
      const error = toBridgeError(failure);
      setNote({ text: `Version ${version.version} cannot be downloaded. ${error.message}${error.code === 'INTERNAL' && error.detail ? ` (${error.detail})` : ''}`, failed: true });
      versions.reload();
    } finally {
      setDownloading(null);
    }
  };

  return (
    <section className="details-versions" aria-labelledby={`versions-${documentId}`}>
      <h3 id={`versions-${documentId}`} className="details-section-title">
        Versions
      </h3>
      {versions.error ? <p className="small muted">The versions cannot be listed: {versions.error.message}</p> : null}
      {note?.failed ? (
        <p className="small tone-text-danger" role="alert">
          {note.text}
        </p>
      ) : note ? (
        <p className="small muted" role="status">
          {note.text}
        </p>
      ) : null}
      <ol className="version-list">
        {list.map((version) => (
          <li key={version.version} className={version.contentLostAt ? 'version-item version-lost' : 'version-item'} data-version={version.version} data-lost={version.contentLostAt ? 'true' : 'false'}>
            <div className="version-head">
              <span className="version-label">Version {version.version}</span>
              {version.current ? <span className="badge tone-success">Current</span> : null}
              {version.contentLostAt ? (
                <span className="badge tone-danger">
                  <Icon name="alert" size={14} /> Lost on the server
                </span>
              ) : null}
            </div>
            <div className="small muted">
              {version.scannedAt ? `Scanned ${formatDateTime(version.scannedAt)} · ` : ''}Uploaded {formatDateTime(version.uploadedAt)} · {formatBytes(version.fileSize)}
            </div>
            {version.contentLostAt ? (
              <p className="small version-lost-note">
                Lost on the server since {formatDateTime(version.contentLostAt)}. IT can restore it from a backup.
              </p>
            ) : version.storageDownloadUri ? (
              <button type="button" className="button small version-download" onClick={() => void download(version)} aria-disabled={downloading !== null}>
                <Icon name="download" size={14} /> {downloading === version.version ? 'Downloading…' : 'Download'}
                <span className="visually-hidden"> version {version.version}</span>
              </button>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  );
}
