/**
 * Resumable upload (tus 1.0: core + creation) for large scans. The upload URL is handed to the
 * caller as soon as it exists (the journal keeps it), so after a dropped connection, a crash or a
 * reboot the upload continues from the offset the server reports instead of from byte 0.
 */
import type { Got, Response } from 'got';
import type { DocumentDto } from '../../../shared/schemas.js';
import { AbortedError, ApiNetworkError, ApiProblemError, FileChangedDuringUploadError, problemFromResponse } from './api-errors.js';
import type { BandwidthLimiter } from '../upload/bandwidth.js';
import type { FileRequest, HttpAnswer } from './file-request.js';
import type { UploadRequest } from './document-api.js';
import { unchangedSinceStart } from '../upload/upload-check.js';

export const TUS_VERSION = '1.0.0';
/** The tus collection under a document's storage URL. */
export const DEFAULT_TUS_PATH = '/uploads';
/** Bytes per PATCH: a stuck request costs at most this much, and the server acknowledges progress. */
const PATCH_BYTES = 64 * 1024 * 1024;
/**
 * On a fast link an upload's pieces grow, up to this: each piece ends in the server's fsync and
 * answer and the next request's checks, a pause of the whole pipe (a 2 GiB scan in 64 MiB pieces
 * pauses 32 times). A stuck piece still costs little: the server keeps the bytes that reached it
 * and the upload resumes from its offset.
 */
export const MAX_PATCH_BYTES = 512 * 1024 * 1024;
/**
 * A grown piece carries about this long of sending at the speed of the upload's last piece, so on
 * a slow clinic link the pieces stay at PATCH_BYTES and the server acknowledges progress as often.
 */
export const PIECE_SECONDS = 5;
/** The smallest piece tried under a proxy's body-size limit before the file fails as too large. */
const MIN_PATCH_BYTES = 64 * 1024;
/** Immediate resumes (HEAD, then PATCH from the server's offset) before the failure is handed back. */
const MAX_RESUMES_WITHOUT_PROGRESS = 3;
/**
 * After a proxy made the pieces smaller, how long until one piece tries the next larger size
 * (IT may have raised the limit meanwhile); doubled after each probe the proxy refuses, up to the
 * maximum, so a proxy that keeps its limit costs one refused piece per hour at most.
 */
export const DEFAULT_PIECE_PROBE = { afterMs: 5 * 60_000, maxMs: 60 * 60_000 } as const;

export interface PieceProbe {
  afterMs: number;
  maxMs: number;
}

export interface TusUploaderOptions {
  /** The client's got instance (its trusted CAs, timeouts); every request goes through it. */
  http: Got;
  /** Sends a request with a bearer token (one retry on 401). */
  send: <Answer extends HttpAnswer>(build: (token: string) => PromiseLike<Answer>) => Promise<Answer>;
  /** Sends a request whose body is a range of a file (a PATCH's piece): file-request.ts. */
  sendFile: (request: FileRequest) => Promise<HttpAnswer>;
  limiter?: BandwidthLimiter | undefined;
  tusPath?: string;
  /** When to try larger pieces again after a proxy's 413 (default DEFAULT_PIECE_PROBE). */
  pieceProbe?: PieceProbe | undefined;
  now?: () => number;
}

/** A PATCH's piece: its nominal size, the bytes it sends (less for the last piece), whether it probes a larger size. */
interface Piece {
  size: number;
  bytes: number;
  probe: boolean;
}

/** Where the piece size stands (for tests and diagnostics). */
export interface PieceState {
  /** Bytes per PATCH now. */
  bytes: number;
  /** When a piece (or a small file in one request) next tries a larger size; null when none is planned. */
  nextProbeAt: number | null;
}

export class TusUploader {
  /**
   * Bytes per PATCH now: quartered each time a proxy refuses a piece as too large (413), kept so
   * while pieces pass, and grown back (×4 a step) by probes once IT may have raised the limit.
   */
  private patchBytes = PATCH_BYTES;
  /** A proxy in front of the server limits request bodies: every upload goes through here, in pieces. */
  bodyLimited = false;
  /** When one piece (or a small file in one request) next tries a larger size; null: nothing to probe. */
  private nextProbeAt: number | null = null;
  /** The wait before the next probe: the base, doubled by each refused probe. */
  private probeDelayMs: number;
  /** A probe is on its way (one at a time, whatever the number of uploads in parallel). */
  private probing = false;
  /** Pieces may grow past PATCH_BYTES on a fast link; false for good once a proxy refused a grown piece. */
  private grows = true;
  private readonly probe: PieceProbe;
  private readonly now: () => number;

  constructor(private readonly options: TusUploaderOptions) {
    this.probe = options.pieceProbe ?? DEFAULT_PIECE_PROBE;
    this.probeDelayMs = this.probe.afterMs;
    this.now = options.now ?? Date.now;
  }

  /** The piece size and when it is next probed. */
  pieces(): PieceState {
    return { bytes: this.patchBytes, nextProbeAt: this.nextProbeAt };
  }

  /**
   * Whether a file small enough for one request must go in pieces: while a proxy limits bodies,
   * except for one file at a time once a probe is due and the pieces are already back at full size
   * (the one-shot route then tries whether the proxy still refuses: see oneShotTried).
   */
  piecesOnly(): boolean {
    if (!this.bodyLimited) return false;
    if (this.probing || this.patchBytes < PATCH_BYTES || this.nextProbeAt === null || this.now() < this.nextProbeAt) return true;
    this.probing = true;
    return false;
  }

  /**
   * The one-shot route's outcome: `refused` when a proxy refused its body as too large (uploads go
   * in pieces from now on, probed up later), else it passed or failed for another reason.
   */
  oneShotTried(outcome: 'passed' | 'refused' | 'other', probe: boolean): void {
    if (probe) this.probing = false;
    if (outcome === 'refused') {
      if (probe) this.probeDelayMs = Math.min(this.probe.maxMs, this.probeDelayMs * 2);
      this.bodyLimited = true;
      this.nextProbeAt = this.now() + this.probeDelayMs;
    } else if (outcome === 'passed' && probe && this.patchBytes >= PATCH_BYTES) {
      this.bodyLimited = false;
      this.nextProbeAt = null;
      this.probeDelayMs = this.probe.afterMs;
    }
  }

  /**
   * The next piece of an upload with `remaining` bytes to go: as large as the size known to pass,
   * or, when a probe is due and the piece would be larger, as the next size up (one probe at a
   * time). Its bytes are what is sent, so a short last piece never counts for more than it proved.
   */
  private nextPiece(remaining: number, earned: number): Piece {
    if (this.nextProbeAt !== null && !this.probing && this.patchBytes < PATCH_BYTES && remaining > this.patchBytes && this.now() >= this.nextProbeAt) {
      this.probing = true;
      const size = Math.min(PATCH_BYTES, this.patchBytes * 4);
      return { size, bytes: Math.min(remaining, size), probe: true };
    }
    // Grown only while nothing limits the bodies (a proxy's limit keeps its own sizes and probes).
    const size = this.grows && !this.bodyLimited && this.patchBytes >= PATCH_BYTES ? Math.max(this.patchBytes, earned) : this.patchBytes;
    return { size, bytes: Math.min(remaining, size), probe: false };
  }

  /** A piece passed the proxy: a probe's size becomes the size, and the next size up is tried at once. */
  private piecePassed(piece: Piece): void {
    if (!piece.probe) return;
    this.probing = false;
    this.patchBytes = Math.max(this.patchBytes, piece.bytes);
    this.probeDelayMs = this.probe.afterMs;
    if (this.patchBytes >= PATCH_BYTES) {
      // Back to full size: the proxy lets any piece through, and small files go in one request again.
      this.nextProbeAt = null;
      this.bodyLimited = false;
    } else {
      this.nextProbeAt = this.now();
    }
  }

  /**
   * A proxy refused a piece as too large. A refused probe keeps the size that passes and waits
   * twice as long before the next; any other refusal (the limit was lowered, or several uploads
   * found it at once) makes the pieces a quarter of the refused one. False when even the smallest
   * piece was refused.
   */
  private pieceRefused(piece: Piece): boolean {
    this.bodyLimited = true;
    // A proxy lets full-size pieces through but not grown ones: they stay at the full size from now on.
    if (piece.size > PATCH_BYTES) this.grows = false;
    if (piece.probe) {
      this.probing = false;
      this.probeDelayMs = Math.min(this.probe.maxMs, this.probeDelayMs * 2);
      this.nextProbeAt = this.now() + this.probeDelayMs;
      return true;
    }
    if (piece.bytes <= MIN_PATCH_BYTES) {
      // Refused even at the smallest piece: the next attempt (after IT raised the limit) starts
      // from large pieces again instead of crawling at 64 KiB for as long as the app runs, and a
      // small file tries one request again (piecesOnly).
      this.patchBytes = PATCH_BYTES;
      this.nextProbeAt = this.now();
      this.probeDelayMs = this.probe.afterMs;
      return false;
    }
    // A quarter of the size, again until below the bytes refused (a short last piece may have been refused).
    let size = piece.size;
    do size = Math.floor(size / 4);
    while (size >= piece.bytes && size > MIN_PATCH_BYTES);
    this.patchBytes = Math.min(this.patchBytes, Math.max(MIN_PATCH_BYTES, size));
    this.nextProbeAt = this.now() + this.probeDelayMs;
    return true;
  }

  /** Resolves with the document when the server answers the last PATCH with it, else null. */
  async upload(request: UploadRequest): Promise<DocumentDto | null> {
    const signal = request.signal;
    let url: string;
    let offset: number;
    const resumed = request.resumeUrl ? await this.statusIfThere(request.resumeUrl, signal) : undefined;
    if (request.resumeUrl && resumed === null) return this.gone(request);
    if (request.resumeUrl && resumed && (resumed.length === null || resumed.length === request.size)) {
      [url, offset] = [request.resumeUrl, resumed.offset];
    } else {
      if (request.resumeUrl) {
        // Begun for bytes the file no longer has (it changed since): appending the new bytes to
        // the old ones would store neither file, so that upload is abandoned and a new one starts.
        await this.terminate(request.resumeUrl, signal);
        request.onResumeUrl?.(null);
      }
      url = await this.create(request);
      request.onResumeUrl?.(url);
      offset = await this.offsetOf(url, signal);
    }
    let failuresWithoutProgress = 0;
    /** The piece size this upload's speed has earned (grownPiece). */
    let earned = PATCH_BYTES;
    for (;;) {
      if (offset >= request.size) {
        request.onResumeUrl?.(null);
        return null;
      }
      const piece = this.nextPiece(request.size - offset, earned);
      try {
        const started = this.now();
        const result = await this.patch(request, url, offset, piece.bytes);
        this.piecePassed(piece);
        failuresWithoutProgress = 0;
        earned = grownPiece(result.offset - offset, this.now() - started);
        offset = result.offset;
        if (offset >= request.size) {
          request.onResumeUrl?.(null);
          return result.document;
        }
      } catch (error) {
        const refusedByProxy = error instanceof ApiProblemError && error.status === 413 && error.foreign;
        // A probe that ended any other way (a network error, a stop) leaves the size as it was, probed again later.
        if (piece.probe && !refusedByProxy) this.probing = false;
        if (request.signal?.aborted) throw new AbortedError('the upload was stopped');
        // A proxy's limit (not the server's, which answers problem details): smaller pieces, from the server's offset.
        if (refusedByProxy && this.pieceRefused(piece)) {
          const reported = await this.offsetIfThere(url, signal);
          if (reported === null) return this.gone(request);
          offset = reported;
          continue;
        }
        if (error instanceof FileChangedDuringUploadError) {
          // Its bytes so far are of a file that is still changing: nothing to resume later.
          await this.terminate(url, signal);
          request.onResumeUrl?.(null);
          throw error;
        }
        if (!(error instanceof ApiNetworkError) || failuresWithoutProgress >= MAX_RESUMES_WITHOUT_PROGRESS) throw error;
        failuresWithoutProgress += 1;
        const reported = await this.offsetIfThere(url, signal);
        if (reported === null) return this.gone(request);
        if (reported > offset) failuresWithoutProgress = 0;
        offset = reported;
      }
    }
  }

  /**
   * The upload is gone: most often a PATCH did complete it and only its answer was lost (the server
   * forgets a finished upload), else it expired. Uploading again could store the same bytes as a
   * second version, so the caller's search by id decides instead: synced if the content is there,
   * else a new upload on the next attempt (the journal no longer names this one).
   */
  private gone(request: UploadRequest): null {
    request.onResumeUrl?.(null);
    return null;
  }

  private async create(request: UploadRequest): Promise<string> {
    const collection = `${request.storageUrl}${this.options.tusPath ?? DEFAULT_TUS_PATH}`;
    const response = await this.options.send((token) => {
      const headers: Record<string, string> = {
        authorization: `Bearer ${token}`,
        'tus-resumable': TUS_VERSION,
        'upload-length': String(request.size),
        'upload-metadata': metadata({ filename: request.fileName, filetype: request.fileType, Id: request.documentId, ...(request.scannedAt ? { ScannedAt: request.scannedAt } : {}) }),
      };
      if (request.ifMatch) headers['if-match'] = `"${request.ifMatch}"`;
      return this.options.http.post(collection, { headers, throwHttpErrors: false, retry: { limit: 0 }, responseType: 'text', timeout: { request: 30_000 }, ...(request.signal ? { signal: request.signal } : {}) });
    });
    const location = response.headers.location;
    if (response.statusCode !== 201 || !location) throw problemFromResponse(response.statusCode, parse(response.body), collection, response.headers['retry-after'], response.headers.location);
    return new URL(location, collection).toString();
  }

  /**
   * The server's offset of the upload, or null when it no longer has it (finished, expired,
   * removed). With `mustExist` (an upload just created, or one that answered a moment ago) its
   * absence is an error like any other.
   */
  private async offsetIfThere(url: string, signal: AbortSignal | undefined, mustExist = false): Promise<number | null> {
    return (await this.statusIfThere(url, signal, mustExist))?.offset ?? null;
  }

  /** The offset and the declared Upload-Length (null when the server did not say) of an upload. */
  private async statusIfThere(url: string, signal: AbortSignal | undefined, mustExist = false): Promise<{ offset: number; length: number | null } | null> {
    const response = await this.head(url, signal);
    const gone = response.statusCode === 404 || response.statusCode === 410 || response.statusCode === 403;
    if (gone && !mustExist) return null;
    if (response.statusCode >= 300) throw problemFromResponse(response.statusCode, parse(response.body), url, response.headers['retry-after'], response.headers.location);
    const offset = Number(response.headers['upload-offset']);
    const length = Number(response.headers['upload-length'] ?? Number.NaN);
    return { offset: Number.isFinite(offset) && offset >= 0 ? offset : 0, length: Number.isFinite(length) && length >= 0 ? length : null };
  }

  /**
   * tus termination: the server may drop the partial bytes now instead of at expiry. Best effort:
   * an upload that cannot be removed expires on its own, so only a stop is passed on.
   */
  async terminate(url: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.options.send((token) =>
        this.options.http.delete(url, {
          headers: { authorization: `Bearer ${token}`, 'tus-resumable': TUS_VERSION },
          throwHttpErrors: false,
          retry: { limit: 0 },
          responseType: 'text',
          timeout: { request: 30_000 },
          ...(signal ? { signal } : {}),
        }),
      );
    } catch {
      if (signal?.aborted) throw new AbortedError('the upload was stopped');
    }
  }

  private async offsetOf(url: string, signal?: AbortSignal): Promise<number> {
    return (await this.offsetIfThere(url, signal, true)) ?? 0;
  }

  private head(url: string, signal: AbortSignal | undefined): Promise<Response<string>> {
    return this.options.send((token) =>
      this.options.http.head(url, {
        headers: { authorization: `Bearer ${token}`, 'tus-resumable': TUS_VERSION, 'cache-control': 'no-store' },
        throwHttpErrors: false,
        retry: { limit: 0 },
        responseType: 'text',
        timeout: { request: 30_000 },
        ...(signal ? { signal } : {}),
      }),
    );
  }

  private async patch(request: UploadRequest, url: string, offset: number, pieceBytes: number): Promise<{ offset: number; document: DocumentDto | null }> {
    const end = Math.min(request.size, offset + pieceBytes);
    let sent = 0;
    const response = await this.options.send((token) => {
      sent = 0;
      return this.options.sendFile({
        method: 'PATCH',
        url,
        headers: {
          authorization: `Bearer ${token}`,
          'tus-resumable': TUS_VERSION,
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
        },
        file: {
          filePath: request.filePath,
          start: offset,
          end,
          beforeLastChunk: end === request.size ? unchangedSinceStart(request) : undefined,
          limiter: this.options.limiter,
          hash: request.hash,
          onBytes: (bytes) => {
            sent += bytes;
            request.onProgress?.(offset + sent);
          },
        },
        signal: request.signal,
      });
    });
    if (response.statusCode === 409) return { offset: await this.offsetOf(url, request.signal), document: null };
    if (response.statusCode >= 300) throw problemFromResponse(response.statusCode, parse(response.body), url, response.headers['retry-after'], response.headers.location);
    const reported = Number(response.headers['upload-offset']);
    const body = parse(response.body) as DocumentDto | undefined;
    return { offset: Number.isFinite(reported) ? reported : end, document: body && typeof body === 'object' && 'id' in body ? body : null };
  }
}

/**
 * The piece size a piece of `bytes` that took `elapsedMs` (sent, made durable and answered) has
 * earned for the next: PIECE_SECONDS of sending at its speed, from PATCH_BYTES to MAX_PATCH_BYTES,
 * in whole MiB.
 */
export function grownPiece(bytes: number, elapsedMs: number): number {
  if (!(bytes > 0)) return PATCH_BYTES;
  const perSecond = bytes / (Math.max(1, elapsedMs) / 1000);
  const MiB = 1024 * 1024;
  return Math.min(MAX_PATCH_BYTES, Math.max(PATCH_BYTES, Math.floor((perSecond * PIECE_SECONDS) / MiB) * MiB));
}

function metadata(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([key, value]) => `${key} ${Buffer.from(value, 'utf8').toString('base64')}`)
    .join(',');
}

function parse(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
