/**
 * The HTTP client of the engine (got): typed on shared/schemas.ts, bearer tokens from the
 * TokenManager with one retry on 401, timeouts, problem details as ApiProblemError, network
 * failures as ApiNetworkError. Uploads stream from disk with progress (file-request.ts, with the same
 * trust and timeouts); large files go through the resumable (tus) route so a dropped connection
 * resumes from the server's offset.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import got, { type Got, type Method, type Response } from 'got';
import type { CreateDocumentResponse, DocumentDto, DocumentVersionDto, OrganizationSummaryDto, PatientListResponse, SearchBody, SearchResponse } from '../../../shared/schemas.js';
import { ApiProblemError, problemFromResponse, toNetworkError, AbortedError, FileChangedDuringUploadError } from './api-errors.js';
import type { BandwidthLimiter } from '../upload/bandwidth.js';
import type { DocumentApi, UploadRequest } from './document-api.js';
import { sendFileRequest, type FileRequest, type FileRequestTransport, type HttpAnswer } from './file-request.js';
import { multipartFraming } from './multipart.js';
import { TokenManager, type Credentials } from './token-manager.js';
import { DEFAULT_TUS_PATH, TUS_VERSION, TusUploader, type PieceProbe, type PieceState } from './tus-upload.js';
import { unchangedSinceStart } from '../upload/upload-check.js';

export interface ApiClientOptions {
  serverUrl: string;
  organizationId: string;
  credentials: Credentials;
  limiter?: BandwidthLimiter;
  /** Files at least this large use the resumable route (default 64 MiB). */
  resumableThreshold?: number;
  timeouts?: { requestMs?: number; connectMs?: number; idleMs?: number };
  now?: () => number;
  /** CA certificates to trust instead of Node's default store (see tls-trust.ts); never a way to skip the check. */
  certificateAuthority?: string[] | undefined;
  /** When to try larger upload pieces again after a proxy's 413 (default DEFAULT_PIECE_PROBE: 5 minutes, doubling to an hour). */
  pieceProbe?: PieceProbe;
}

export const DEFAULT_RESUMABLE_THRESHOLD = 64 * 1024 * 1024;

export interface JsonRequest {
  method: Method;
  url: string;
  json?: unknown;
  searchParams?: Record<string, string | number>;
  organization?: boolean;
}

export { FileChangedDuringUploadError };

/** A page of `GET /v1/patients`, with the identifiers and birth date each patient carries (when the server keeps them). */
export interface PatientPage {
  patients: Array<{ id: string; name: string; birthDate?: string | null; identifiers?: Array<{ system: string; value: string }> }>;
  offset: number;
  limit: number;
  total: number;
}

export class ApiClient implements DocumentApi {
  readonly tokens: TokenManager;
  readonly http: Got;
  readonly serverUrl: string;
  private readonly tus: TusUploader;
  /** How upload requests reach the server: what `http` is configured with. */
  private readonly transport: FileRequestTransport;

  constructor(private readonly options: ApiClientOptions) {
    this.serverUrl = options.serverUrl.replace(/\/$/, '');
    const connect = options.timeouts?.connectMs ?? 10_000;
    this.transport = { certificateAuthority: options.certificateAuthority, connectMs: connect, idleMs: options.timeouts?.idleMs ?? 60_000 };
    this.http = got.extend({
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      timeout: { connect, socket: options.timeouts?.idleMs ?? 60_000 },
      ...(options.certificateAuthority ? { https: { certificateAuthority: options.certificateAuthority } } : {}),
    });
    this.tokens = new TokenManager({ http: this.http, credentials: options.credentials, ...(options.now ? { now: options.now } : {}) });
    this.tus = new TusUploader({
      http: this.http,
      send: (build) => this.authorized(build),
      sendFile: (request: FileRequest) => sendFileRequest(request, this.transport),
      limiter: options.limiter,
      pieceProbe: options.pieceProbe,
      ...(options.now ? { now: options.now } : {}),
    });
  }

  createDocument(patientId: string, fileName: string, path: string, scannedAt?: string): Promise<CreateDocumentResponse> {
    const json = scannedAt === undefined ? { fileName, path } : { fileName, path, scannedAt };
    return this.json<CreateDocumentResponse>({ method: 'POST', url: `${this.patientUrl(patientId)}/documents`, json, organization: true });
  }

  search(patientId: string, body: SearchBody): Promise<SearchResponse> {
    return this.json<SearchResponse>({ method: 'POST', url: `${this.patientUrl(patientId)}/documents/search`, json: body, organization: true });
  }

  getDocument(patientId: string, documentId: string): Promise<DocumentDto> {
    return this.json<DocumentDto>({ method: 'GET', url: `${this.patientUrl(patientId)}/documents/${encodeURIComponent(documentId)}`, organization: true });
  }

  async versions(patientId: string, documentId: string): Promise<DocumentVersionDto[]> {
    const answer = await this.json<{ versions: DocumentVersionDto[] }>({ method: 'GET', url: `${this.patientUrl(patientId)}/documents/${encodeURIComponent(documentId)}/versions`, organization: true });
    return answer.versions;
  }

  /** GET /v1/patients; `identifier` is `system|value` (exact), `birthDate` YYYY-MM-DD; every filter given must hold. */
  listPatients(query: { name?: string | undefined; identifier?: string | undefined; birthDate?: string | undefined; offset?: number | undefined; limit?: number | undefined }): Promise<PatientListResponse> {
    const searchParams: Record<string, string | number> = {};
    if (query.name) searchParams.name = query.name;
    if (query.identifier) searchParams.identifier = query.identifier;
    if (query.birthDate) searchParams.birthDate = query.birthDate;
    if (query.offset !== undefined) searchParams.offset = query.offset;
    if (query.limit !== undefined) searchParams.limit = query.limit;
    return this.json<PatientListResponse>({ method: 'GET', url: `${this.serverUrl}/v1/patients`, searchParams, organization: true });
  }

  /**
   * Patients the organization may see, by any of the filters `GET /v1/patients` takes (an
   * identifier as `system|value`, exact; a name in any word order; a birth date): what the scanner
   * inbox matches a case's evidence against.
   */
  findPatients(query: { name?: string; identifier?: string; birthDate?: string; offset?: number; limit?: number }): Promise<PatientPage> {
    const searchParams: Record<string, string | number> = {};
    for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== '') searchParams[key] = value;
    return this.json<PatientPage>({ method: 'GET', url: `${this.serverUrl}/v1/patients`, searchParams, organization: true });
  }

  /** The connected organization's id and name (GET /v1/organizations/{id}). */
  organization(): Promise<OrganizationSummaryDto> {
    return this.json<OrganizationSummaryDto>({ method: 'GET', url: `${this.serverUrl}/v1/organizations/${encodeURIComponent(this.options.organizationId)}` });
  }

  async upload(request: UploadRequest): Promise<DocumentDto | null> {
    try {
      return await this.uploadByRoute(request);
    } catch (error) {
      // The server's own limit refused it (not a proxy's): the limit kept is out of date.
      if (error instanceof ApiProblemError && error.status === 413 && !error.foreign) this.limit = null;
      throw error;
    }
  }

  /**
   * The server's upload limit from its tus capabilities (OPTIONS answers Tus-Max-Size; no token
   * needed), asked once per client and again after a 413 or when `fresh`. A failed question is not
   * kept: the next file asks again.
   */
  uploadLimit(fresh = false): Promise<number | null> {
    if (fresh || !this.limit) {
      const asked = this.askUploadLimit();
      this.limit = asked;
      asked.catch(() => {
        if (this.limit === asked) this.limit = null;
      });
    }
    return this.limit;
  }

  private limit: Promise<number | null> | null = null;

  private async askUploadLimit(): Promise<number | null> {
    // Any document's collection answers the same; the nil UUID names none.
    const url = `${this.serverUrl}/storage/v1/documents/00000000-0000-0000-0000-000000000000${DEFAULT_TUS_PATH}`;
    let response: Response<string>;
    try {
      response = await this.http(url, { method: 'OPTIONS', headers: { 'tus-resumable': TUS_VERSION }, responseType: 'text', timeout: { request: this.options.timeouts?.requestMs ?? 30_000 } });
    } catch (error) {
      throw toNetworkError(error);
    }
    const header = response.headers['tus-max-size'];
    const limit = typeof header === 'string' && /^\d{1,16}$/.test(header) ? Number(header) : Number.NaN;
    return response.statusCode < 300 && limit > 0 ? limit : null;
  }

  private async uploadByRoute(request: UploadRequest): Promise<DocumentDto | null> {
    const threshold = this.options.resumableThreshold ?? DEFAULT_RESUMABLE_THRESHOLD;
    if (request.size >= threshold || request.resumeUrl) return this.tus.upload(request);
    // While a proxy limits bodies small files go in pieces too, but for a probe now and then (IT may have raised the limit).
    const probe = this.tus.bodyLimited;
    if (this.tus.piecesOnly()) return this.tus.upload(request);
    let result: DocumentDto | null;
    try {
      result = await this.uploadOnce(request);
    } catch (error) {
      // A proxy's body-size limit (nginx's client_max_body_size is 1 MB unless IT raises it), not
      // the server's: the resumable route sends the file in pieces small enough to pass.
      const refused = error instanceof ApiProblemError && error.status === 413 && error.foreign;
      this.tus.oneShotTried(refused ? 'refused' : 'other', probe);
      if (!refused) throw error;
      return this.tus.upload(request);
    }
    this.tus.oneShotTried('passed', probe);
    return result;
  }

  /** The size of resumable upload pieces now, and when a larger one is next tried (after a proxy's 413). */
  uploadPieces(): PieceState {
    return this.tus.pieces();
  }

  abandonUpload(uploadUrl: string, signal?: AbortSignal): Promise<void> {
    return this.tus.terminate(uploadUrl, signal);
  }

  /**
   * Saves a signed download link's bytes to `destination` (streamed: scans can be hundreds of MB),
   * trusting what this client trusts. Written beside it first, so a cut-off download leaves no
   * partial file under the chosen name.
   */
  async download(url: string, destination: string): Promise<void> {
    const partial = `${destination}.download`;
    try {
      const stream = this.http.stream(url, { timeout: { connect: this.options.timeouts?.connectMs ?? 10_000, socket: 60_000 } });
      stream.once('response', (response: { statusCode: number }) => {
        if (response.statusCode >= 300) stream.destroy(problemFromResponse(response.statusCode, undefined, url, undefined));
      });
      await pipeline(stream, createWriteStream(partial));
      await rename(partial, destination);
    } catch (error) {
      await rm(partial, { force: true });
      throw toNetworkError(error);
    }
  }

  /**
   * Opens a signed link of this server (a download or a thumbnail) for the UI to read through the
   * engine, which trusts the clinic's CA where the browser may not. Null for any address outside
   * the server's own (so this is no open proxy). No bearer token is sent: the link is signed.
   */
  async openContent(url: string): Promise<{ status: number; headers: Record<string, string>; body: NodeJS.ReadableStream } | null> {
    if (!this.isServerLink(url)) return null;
    const stream = this.http.stream(url, { timeout: { connect: this.options.timeouts?.connectMs ?? 10_000, socket: 60_000 } });
    try {
      const response = await new Promise<{ statusCode: number; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
        stream.once('response', resolve);
        stream.once('error', reject);
      });
      const headers: Record<string, string> = {};
      for (const name of ['content-type', 'content-length', 'content-disposition', 'etag', 'last-modified']) {
        const value = response.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      return { status: response.statusCode, headers, body: stream };
    } catch (error) {
      stream.destroy();
      throw toNetworkError(error);
    }
  }

  /** The address is under the server's own (scheme, host, port and path prefix). */
  isServerLink(url: string): boolean {
    try {
      const target = new URL(url);
      const base = new URL(`${this.serverUrl}/`);
      return target.origin === base.origin && target.pathname.startsWith(base.pathname) && target.username === '' && target.password === '';
    } catch {
      return false;
    }
  }

  /** A JSON call with the bearer token (and Organization-ID); problem details become ApiProblemError. */
  async json<T>(request: JsonRequest): Promise<T> {
    const response = await this.authorized((token) =>
      this.http(request.url, {
        method: request.method,
        headers: this.headers(token, request.organization ?? false),
        ...(request.json !== undefined ? { json: request.json } : {}),
        ...(request.searchParams ? { searchParams: request.searchParams } : {}),
        responseType: 'text',
        timeout: { request: this.options.timeouts?.requestMs ?? 30_000 },
      }),
    );
    return expectOk<T>(response, request.url);
  }

  /**
   * Runs a request with a token; on 401 drops that token and tries once more with a fresh one.
   * `build` is called again for the retry, so a streamed body is rebuilt rather than reused.
   */
  async authorized<Answer extends HttpAnswer>(build: (token: string) => PromiseLike<Answer>): Promise<Answer> {
    for (let attempt = 0; ; attempt += 1) {
      const token = await this.tokens.token();
      let response: Answer;
      try {
        response = await build(token.accessToken);
      } catch (error) {
        throw toNetworkError(error);
      }
      this.noteServerDate(response.headers.date);
      if (response.statusCode !== 401 || attempt > 0) return response;
      this.tokens.invalidate(token.accessToken);
    }
  }

  private async uploadOnce(request: UploadRequest): Promise<DocumentDto> {
    let sent = 0;
    const response = await this.authorized((token) => {
      sent = 0;
      const multipart = multipartFraming({
        fields: { FileName: request.fileName, Type: request.fileType, Id: request.documentId, ...(request.scannedAt ? { ScannedAt: request.scannedAt } : {}) },
        file: { field: 'file', fileName: request.fileName, contentType: 'application/octet-stream' },
      });
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': multipart.contentType };
      if (request.ifMatch) headers['if-match'] = `"${request.ifMatch}"`;
      return sendFileRequest(
        {
          method: 'POST',
          url: `${request.storageUrl}/file`,
          headers,
          head: multipart.head,
          tail: multipart.tail,
          file: {
            filePath: request.filePath,
            end: request.size,
            beforeLastChunk: unchangedSinceStart(request),
            limiter: this.options.limiter,
            hash: request.hash,
            onBytes: (bytes) => {
              sent += bytes;
              request.onProgress?.(sent);
            },
          },
          signal: request.signal,
        },
        this.transport,
      );
    }).catch((error: unknown) => {
      if (request.signal?.aborted) throw new AbortedError('the upload was stopped');
      throw error;
    });
    return expectOk<DocumentDto>(response, `${request.storageUrl}/file`);
  }

  /**
   * How far the server's clock is ahead of this computer's (ms), from the Date header of its last
   * answer; null before the first. Lets time checks against the server's timestamps (webhooks) use
   * the server's time instead of a workstation clock that drifted.
   */
  serverClockOffsetMs(): number | null {
    return this.clockOffsetMs;
  }

  private clockOffsetMs: number | null = null;

  private noteServerDate(header: string | undefined): void {
    const serverMs = header ? Date.parse(header) : Number.NaN;
    // Date has whole seconds: the middle of that second is the best guess.
    if (Number.isFinite(serverMs)) this.clockOffsetMs = serverMs + 500 - (this.options.now ?? Date.now)();
  }

  private headers(token: string, organization: boolean): Record<string, string> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (organization) headers['organization-id'] = this.options.organizationId;
    return headers;
  }

  private patientUrl(patientId: string): string {
    return `${this.serverUrl}/v1/patients/${encodeURIComponent(patientId)}`;
  }
}

export function expectOk<T>(response: HttpAnswer, url: string): T {
  const body = parseBody(response.body);
  if (response.statusCode >= 200 && response.statusCode < 300) return body as T;
  throw problemFromResponse(response.statusCode, body, url, response.headers['retry-after'], response.headers.location);
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
