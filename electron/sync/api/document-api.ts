/**
 * The server as the engine needs it (STYLE.md "the engine owns its interfaces"): create, upload,
 * search. api-client.ts implements it over HTTP; tests may hand in a fake.
 */
import type { SentBytesHash } from '../upload/hash.js';
import type { FileStamp } from '../upload/upload-check.js';
import type { CreateDocumentResponse, DocumentDto, PatientListResponse, SearchBody, SearchResponse } from '../../../shared/schemas.js';

export interface UploadRequest {
  patientId: string;
  storageUrl: string;
  documentId: string;
  filePath: string;
  fileName: string;
  fileType: string;
  /** Bytes to send: the size the file had when it was found stable. */
  size: number;
  /** The mtime that went with `size`: a file whose size or mtime differs before the last bytes leave is refused. */
  mtimeMs?: number | undefined;
  /** The file's stamp taken before its first byte was read: any change of it fails the upload before its last bytes leave. */
  stamp?: FileStamp | undefined;
  /** Fed the bytes as they are sent, in file order (the file is read once to send and hash it). */
  hash?: SentBytesHash | undefined;
  /** sha256 of the content the server holds now; set for a new version. */
  ifMatch: string | null;
  /** When the file was made (its mtime when found stable, ISO 8601 UTC): sent as ScannedAt. */
  scannedAt?: string | undefined;
  signal?: AbortSignal | undefined;
  /** Total bytes the server has so far (including bytes of an earlier, resumed attempt). */
  onProgress?: ((bytesDone: number) => void) | undefined;
  /** A resumable upload begun earlier (the journal keeps it across restarts). */
  resumeUrl?: string | null | undefined;
  /** Called when a resumable upload is created (to persist it), and with null when it is gone. */
  onResumeUrl?: ((url: string | null) => void) | undefined;
}

export interface DocumentApi {
  /** `scannedAt`: when the file was made (ISO 8601 UTC), the document's scan time (docs/api.md "Scan times"). */
  createDocument(patientId: string, fileName: string, path: string, scannedAt?: string): Promise<CreateDocumentResponse>;
  upload(request: UploadRequest): Promise<DocumentDto | null>;
  /** Gives up a resumable upload begun earlier (best effort; the server expires it otherwise). */
  abandonUpload?(uploadUrl: string, signal?: AbortSignal): Promise<void>;
  search(patientId: string, body: SearchBody): Promise<SearchResponse>;
  /**
   * The largest file the server accepts (bytes), null when it does not say. Kept once learned;
   * `fresh` asks the server again (its limit may have been raised since).
   */
  uploadLimit?(fresh?: boolean): Promise<number | null>;
  listPatients(query: { name?: string | undefined; offset?: number | undefined; limit?: number | undefined }): Promise<PatientListResponse>;
}

