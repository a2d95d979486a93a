/**
 * Document content (SPEC §3.1, §4.2; DESIGN §3 "Documents"): who may upload, the atomic commit
 * that both upload routes end in, versions, deletion and what signed links serve.
 *
 * The commit order is what keeps a document from ever claiming bytes it lacks: bytes land in a
 * temp object, are made durable under a key of their own (storage's keep: a rename on the local
 * disk, the received object itself in an object store), and only then does one transaction make
 * the version current, naming that key, and record `document.uploaded`. A crash before that
 * transaction leaves an unreferenced object, which garbage collection removes.
 */
import { typeFromNameAndHead } from '../../shared/dicom.js';
import type { DocumentVersionDto } from '../../shared/schemas.js';
import type { Principal } from '../identity/tokens.js';
import type { DocumentRecord, DocumentVersionRecord, Store } from '../db/types.js';
import { conflict, forbidden, isDatabaseBusy, isTransientStorageFault, notFound, serviceUnavailable } from '../errors.js';
import type { ContentStorage, ReceivedContent } from '../storage/types.js';
import type { AccessGuard } from './access.js';
import type { Actor, DocumentService } from './document-service.js';
import { outboxEvent } from './events.js';
import { mediaTypeOf } from './http-serving.js';
import { unsignedParameters, type LinkHolder, type LinkKind, type Links } from './links.js';
import type { ThumbnailJobs } from './thumbnail-jobs.js';
import { wokenOrTimedOut } from './wake.js';

export interface UploadForm {
  /** FileName of the form: kept with the version; the document keeps its own name. */
  fileName?: string;
  /** Type of the form: what the client says the bytes are. */
  fileType?: string;
  /** When the file was made (checked, UTC): the version's and the document's scan time; absent keeps the document's. */
  scannedAt?: string;
}

export type VersionDto = DocumentVersionDto;

/** What the service learns about an access that the audit log records (filled in as it goes, refused or not). */
export interface AccessFacts {
  patientId?: string;
  organizationId?: string;
  clientId?: string | null;
  version?: number;
  /** The access happened (an upload committed), whatever becomes of the answer. */
  completed?: boolean;
  detail: Record<string, unknown>;
}

export interface DownloadTarget {
  key: string;
  size: number;
  fileName: string;
  mediaType: string;
  etag: string;
  /** The sha256 the whole content must have (content only): a download is checked against it as it streams. */
  sha256?: string;
}

const CLIENT_ID = /^[A-Za-z0-9._-]{1,128}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The client and organization a link names, if it names them in their shapes (before its signature is checked). */
function holderOf(query: { client?: string; org?: string }): LinkHolder | undefined {
  if (query.client === undefined && query.org === undefined) return undefined;
  return { clientId: query.client ?? '', organizationId: (query.org ?? '').toLowerCase() };
}

/** A link's own parameters where each is given once (a list, or anything else, counts as absent). */
function singleValues(parameters: Readonly<Record<string, unknown>>): { v?: string; expires?: string; sig?: string; client?: string; org?: string } {
  const single = (name: string) => (typeof parameters[name] === 'string' ? { [name]: parameters[name] } : {});
  return { ...single('v'), ...single('expires'), ...single('sig'), ...single('client'), ...single('org') };
}

/** `"abc…"` or `W/"abc…"` → `abc…`; the ETag we hand out is the sha256 in quotes. */
export function parseEntityTag(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^\s*(?:W\/)?"([^"]*)"\s*$/.exec(header);
  return (match?.[1] ?? header.trim()).toLowerCase();
}

/** How long the commit of received bytes keeps trying while the database is busy (other requests run meanwhile). */
const COMMIT_BUSY_WAIT_MS = 10_000;

/** Runs `write` again, after short pauses that leave the event loop free, while it fails with SQLITE_BUSY, for up to `waitMs`. */
export async function whileBusy<T>(write: () => Promise<T>, waitMs: number): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (let pause = 25; ; pause = Math.min(pause * 2, 500)) {
    try {
      return await write();
    } catch (error) {
      if (!isDatabaseBusy(error) || Date.now() + pause > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** How long a thumbnail link waits for a render still running before it answers 503. */
const THUMBNAIL_WAIT_MS = 15_000;

export class ContentService {
  /** Documents with an upload being committed or streamed in this process: the fast path of the 409 race. */
  private readonly inFlight = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly storage: ContentStorage,
    private readonly documents: DocumentService,
    private readonly access: AccessGuard,
    private readonly links: Links,
    private readonly thumbnails: ThumbnailJobs,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * The upload routes carry no Organization-ID: the document's organization must be one of the
   * client's, and that organization must still have access to and consent from the patient.
   */
  async authorizeWrite(principal: Principal, documentId: string, facts?: AccessFacts): Promise<DocumentRecord> {
    const document = await this.store.content.find(documentId);
    if (document && facts) {
      facts.patientId = document.patientId;
      facts.organizationId = document.organizationId;
    }
    this.access.requireScope(principal, 'Patient.File.Write');
    if (!document) throw notFound(`document ${documentId} does not exist`);
    const organizations = await this.access.organizationsOf(principal);
    if (!organizations.has(document.organizationId)) {
      throw forbidden(`the client ${principal.clientId} has no access to the organization that owns document ${documentId}`);
    }
    await this.access.requireOrganization(principal, document.organizationId);
    await this.access.requirePatient(document.organizationId, document.patientId);
    return document;
  }

  /** A second upload needs the current content's sha256 in If-Match (DESIGN §3). */
  checkPrecondition(document: DocumentRecord, ifMatch: string | undefined): void {
    const expected = parseEntityTag(ifMatch);
    if (document.hasContent && expected === undefined) {
      throw conflict(`document ${document.id} already has content; to store a new version send If-Match: "${document.sha256 ?? ''}"`);
    }
    // Its stored file was lost (admin `verify --mark-lost`): there is nothing to replace, so an
    // If-Match naming some content cannot hold; the scan goes up again as a first upload does.
    if (expected !== undefined && !document.hasContent && document.version > 0) {
      throw conflict(`document ${document.id} has no content on the server: its stored file was lost; upload the file again without If-Match`);
    }
    // RFC 9110: `If-Match: *` holds only when there is a current representation to replace.
    if (expected === '*' && !document.hasContent) {
      throw conflict(`If-Match: * asks to replace content, but document ${document.id} has none yet; send the upload without If-Match`);
    }
    if (expected !== undefined && expected !== '*' && expected !== document.sha256) {
      throw conflict(`If-Match does not match the current content of document ${document.id}; read the document again and retry with its sha256`);
    }
  }

  /** Claims the document for one upload in this process; the returned function releases it. */
  claim(documentId: string): () => void {
    const key = documentId.toLowerCase();
    if (this.inFlight.has(key)) throw conflict(`another upload to document ${documentId} is in progress`);
    this.inFlight.add(key);
    return () => {
      this.inFlight.delete(key);
      if (this.inFlight.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    };
  }

  /** Uploads being received or committed (a shutdown waits for them: an upload cut off is discarded, never half kept). */
  uploadsInFlight(): number {
    return this.inFlight.size;
  }

  /** Resolves when no upload is in flight (each has committed or discarded its bytes), or after `timeoutMs`. */
  uploadsSettled(timeoutMs: number): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return wokenOrTimedOut(timeoutMs, (wake) => this.idleWaiters.push(wake));
  }

  private readonly idleWaiters: Array<() => void> = [];

  /** Makes received bytes the document's current version (see the file comment for the order). */
  /**
   * `keepOnFault`: when the disk or database fails for a passing reason (full, read-only, busy),
   * the received bytes are left in their temp object rather than discarded (the caller keeps them).
   */
  async commit(document: DocumentRecord, received: ReceivedContent, form: UploadForm, actor: Actor, options: { keepOnFault?: boolean } = {}): Promise<DocumentRecord> {
    const uploadedAt = this.now().toISOString();
    const version = document.version + 1;
    const fileType = typeFromNameAndHead(form.fileType ?? document.fileType, received.head);
    // A resumable upload keeps its bytes through a passing fault (see keepOnFault): they are its
    // client's hours of upload, and the temp object goes back to it.
    const keep = (error: unknown): boolean => options.keepOnFault === true && isTransientStorageFault(error);
    let contentKey: string;
    try {
      // Unique per attempt, so a losing racer can never overwrite the winner's bytes; the storage
      // may keep them under a key of its own instead (where they were received), which the record names.
      contentKey = await this.storage.keep(received.temp, `documents/${document.id}/v${version}-${received.temp.id}`);
    } catch (error) {
      if (!keep(error)) await this.storage.discard(received.temp);
      throw error;
    }
    const record: DocumentVersionRecord = {
      documentId: document.id,
      version,
      fileType,
      originalFileName: form.fileName ?? null,
      fileSize: received.size,
      sha256: received.sha256,
      contentKey,
      contentType: mediaTypeOf(fileType),
      thumbnailKey: null,
      thumbnailStatus: this.thumbnails.supports(fileType) ? 'pending' : 'none',
      thumbnailError: null,
      uploadedAt,
      uploadedBy: actor.clientId,
      contentLostAt: null,
      scannedAt: form.scannedAt ?? document.scannedAt ?? null,
    };
    const updated: DocumentRecord = {
      ...document,
      hasContent: true,
      fileSize: received.size,
      sha256: received.sha256,
      version,
      fileType,
      contentKey: record.contentKey,
      contentType: record.contentType,
      thumbnailKey: null,
      lastModifiedAt: uploadedAt,
      scannedAt: record.scannedAt ?? null,
    };
    const event = outboxEvent('document.uploaded', {
      patientId: document.patientId,
      organizationId: document.organizationId,
      operationId: actor.operationId,
      occurredAt: uploadedAt,
      data: { document: this.documents.toEventData(updated), fileSize: received.size, sha256: received.sha256, version },
    });
    let committed: boolean;
    try {
      // Whole scans were received for this write: a database held for a moment by another process
      // (the admin CLI) is waited out here, asynchronously, instead of throwing the bytes away.
      committed = await whileBusy(() => this.store.content.commitVersion(record, document.version, [event]), COMMIT_BUSY_WAIT_MS);
    } catch (error) {
      // The database refused the write (disk full, read-only, busy): the bytes no record names go now,
      // not an hour later, so they do not keep the disk full, or back to the temp object to be kept.
      if (keep(error)) await this.storage.uncommit(record.contentKey, received.temp);
      else await this.storage.remove(record.contentKey).catch(() => undefined);
      throw error;
    }
    if (!committed) {
      await this.storage.remove(record.contentKey);
      throw conflict(`document ${document.id} changed or was deleted while the upload was in progress; read it again and retry`);
    }
    // A small file's bytes came with it (ReceivedContent.content): its render reads no file.
    if (record.thumbnailStatus === 'pending') this.thumbnails.enqueue(record, received.content);
    return updated;
  }

  /**
   * Returns the document as it was when deleted. Only the document's own organization deletes it,
   * as only it uploads to it (docs/security.md "Who may write what"): another organization that
   * may see the patient's files reads them, it does not remove them.
   */
  async remove(patientId: string, documentId: string, actor: Actor): Promise<DocumentRecord> {
    const document = await this.store.documents.get(patientId, documentId);
    if (!document) throw notFound(`document ${documentId} does not exist for patient ${patientId}`);
    if (document.organizationId !== actor.organizationId.toLowerCase()) {
      throw forbidden(`document ${documentId} belongs to organization ${document.organizationId}; only that organization may delete it (Organization-ID ${actor.organizationId} may read it)`);
    }
    const at = this.now().toISOString();
    const event = outboxEvent('document.deleted', {
      patientId,
      organizationId: actor.organizationId,
      operationId: actor.operationId,
      occurredAt: at,
      data: { document: this.documents.toEventData(document), deletedAt: at },
    });
    if (!(await this.store.content.remove(patientId, document.id, { at, by: actor.clientId }, [event]))) {
      throw notFound(`document ${documentId} does not exist for patient ${patientId}`);
    }
    return document;
  }

  async versions(patientId: string, documentId: string, holder: LinkHolder): Promise<VersionDto[]> {
    const document = await this.store.documents.get(patientId, documentId);
    if (!document) throw notFound(`document ${documentId} does not exist for patient ${patientId}`);
    const versions = await this.store.content.versions(document.id);
    return versions.map((version) => ({
      version: version.version,
      // A lost current version (verify --mark-lost) is served no more: the document has no current content.
      current: version.version === document.version && document.hasContent,
      fileType: version.fileType,
      fileSize: version.fileSize,
      sha256: version.sha256,
      originalFileName: version.originalFileName,
      uploadedAt: version.uploadedAt,
      uploadedBy: version.uploadedBy,
      thumbnailStatus: version.thumbnailStatus,
      // A version marked lost gets no link: it could only answer 404 (see resolveLink).
      storageDownloadUri: version.contentLostAt === null ? this.links.signed(document.id, version.version, 'content', holder) : null,
      contentLostAt: version.contentLostAt,
      scannedAt: version.scannedAt ?? null,
    }));
  }

  /**
   * What a signed link serves: the version it names (links stay valid for their 15 minutes even
   * when a newer version arrives, and always serve the bytes their ETag promises).
   */
  async resolveLink(
    documentId: string,
    parameters: Readonly<Record<string, unknown>>,
    kind: LinkKind,
    facts: AccessFacts = { detail: {} },
  ): Promise<DownloadTarget> {
    const query = singleValues(parameters);
    const version = Number(query.v);
    const expires = Number(query.expires);
    const holder = holderOf(query);
    // Until the signature is checked, the link's holder is only what it claims: recorded as such.
    facts.clientId = null;
    if (Number.isSafeInteger(version)) facts.version = version;
    if (holder) {
      if (CLIENT_ID.test(holder.clientId)) facts.detail.claimedClient = holder.clientId;
      if (UUID.test(holder.organizationId)) facts.detail.claimedOrganization = holder.organizationId;
    }
    const refuse = async (detail: string): Promise<never> => {
      // Whose file the refused link points at: the log can then show it with the patient's other accesses.
      const target = await this.store.content.find(documentId).catch(() => undefined);
      if (target) facts.patientId = target.patientId;
      throw forbidden(detail);
    };
    const unsigned = unsignedParameters(parameters);
    if (unsigned.length > 0) {
      return refuse(`the download link was altered: ${unsigned.map((name) => JSON.stringify(name.slice(0, 40))).join(', ')} is not part of its signature; use the link exactly as it was handed out`);
    }
    if (Object.values(parameters).some((value) => typeof value !== 'string')) {
      return refuse('the download link was altered: a parameter of its signature is given twice; use the link exactly as it was handed out');
    }
    if (!query.sig || !Number.isSafeInteger(version) || !Number.isSafeInteger(expires) || (holder && (!CLIENT_ID.test(holder.clientId) || !UUID.test(holder.organizationId)))) {
      return refuse('the download link is incomplete; ask for the document again to get a fresh link');
    }
    const verdict = this.links.check({ documentId, version, kind, expires, ...(holder ? { holder } : {}) }, query.sig);
    if (verdict === 'invalid') return refuse('the download link is not valid (its signature does not match)');
    // The signature vouches for the holder from here on (even for an expired link).
    if (holder) {
      facts.clientId = holder.clientId;
      facts.organizationId = holder.organizationId;
      delete facts.detail.claimedClient;
      delete facts.detail.claimedOrganization;
    } else {
      facts.detail.link = 'signed before the audit log: client unknown';
    }
    if (verdict === 'expired') return refuse('the download link has expired; ask for the document again to get a fresh link');
    const document = await this.store.content.find(documentId);
    if (document) facts.patientId = document.patientId;
    let stored = document ? await this.store.content.version(document.id, version) : undefined;
    if (!document || !stored) throw notFound(`document ${documentId} has no content version ${version}`);
    if (holder) {
      const refusal = await this.access.linkHolderRefusal(holder.clientId, holder.organizationId, document.patientId);
      if (refusal) throw forbidden(`${refusal}; the download link no longer works`);
    }
    if (kind === 'content' && stored.contentLostAt !== null) {
      // A link handed out before the mark: the record says these bytes are gone, whatever the disk holds now.
      throw notFound(
        `the stored file of document ${documentId} version ${version} was marked lost on the server (${stored.contentLostAt}); ` +
          'the server administrator must restore it from a backup, or the file must be uploaded again',
      );
    }
    if (kind === 'thumbnail' && stored.thumbnailStatus === 'pending') {
      // The link is handed out as soon as the content is stored; its render may still be running.
      await this.thumbnails.settled(document.id, version, THUMBNAIL_WAIT_MS);
      stored = (await this.store.content.version(document.id, version)) ?? stored;
      if (stored.thumbnailStatus === 'pending') throw serviceUnavailable(`the thumbnail of document ${documentId} is still being rendered; retry shortly`, 2);
    }
    if (kind === 'thumbnail' && stored.thumbnailStatus === 'failed') {
      const why = stored.thumbnailError ? ` (${stored.thumbnailError})` : '';
      throw notFound(`the thumbnail of document ${documentId} version ${version} could not be rendered from its content${why}`);
    }
    const key = kind === 'content' ? stored.contentKey : stored.thumbnailKey;
    if (!key) throw notFound(`document ${documentId} has no ${kind === 'content' ? 'content' : 'thumbnail'} for version ${version}`);
    const size = await this.storage.size(key);
    if (kind === 'content' && size !== stored.fileSize) {
      // The record says the bytes are stored, the disk disagrees (a backup restored without its
      // files, an antivirus quarantine, a truncated copy): never serve part of a file as the whole.
      throw notFound(
        `the stored file of document ${documentId} version ${version} is ${size === undefined ? 'missing' : `damaged (${size} of its ${stored.fileSize} bytes are there)`} on the server; ` +
          'the server administrator must restore it from a backup, or the file must be uploaded again',
      );
    }
    if (size === undefined) {
      // Lost from the disk (a restore without it): rendered again from the content, which a retry then finds.
      const pending: DocumentVersionRecord = { ...stored, thumbnailStatus: 'pending', thumbnailKey: null, thumbnailError: null };
      await this.store.content.setThumbnail(document.id, version, { status: 'pending', key: null, error: null });
      this.thumbnails.enqueue(pending);
      throw serviceUnavailable(`the thumbnail of document ${documentId} was missing on the server and is being rendered again; retry shortly`, 2);
    }
    if (kind === 'thumbnail') {
      return { key, size, fileName: `${document.fileName}.png`, mediaType: 'image/png', etag: `"${stored.sha256}-thumbnail"` };
    }
    return { key, size, fileName: document.fileName, mediaType: stored.contentType, etag: `"${stored.sha256}"`, sha256: stored.sha256 };
  }
}
