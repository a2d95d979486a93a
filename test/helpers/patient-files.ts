/**
 * The patient-document API as a workstation calls it, for tests against a real server process:
 * one token, then create and upload (one request, as the engine sends a small scan), search, read
 * one document and its versions. Answers are returned as they came, for the test to judge.
 */
import { CLIENT, ORG, PATIENT } from './server.js';

export interface Uploaded {
  id: string;
  sha256: string;
  version: number;
}

export class PatientFiles {
  private constructor(
    private readonly url: string,
    private readonly bearer: string,
    /** The folder new documents are created in. */
    private readonly folder: string,
  ) {}

  static async connect(url: string, folder: string): Promise<PatientFiles> {
    const response = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
    if (response.status !== 200) throw new Error(`token: ${response.status} ${await response.text()}`);
    return new PatientFiles(url, ((await response.json()) as { access_token: string }).access_token, folder);
  }

  headers(): Record<string, string> {
    return { authorization: `Bearer ${this.bearer}`, 'organization-id': ORG, 'content-type': 'application/json' };
  }

  /** Creates the document unless `documentId` is given, then uploads `bytes` as its content; the storage route's answer. */
  async upload(fileName: string, bytes: Buffer, options: { documentId?: string; ifMatch?: string } = {}): Promise<{ status: number; body: any }> {
    let id = options.documentId;
    if (!id) {
      const created = await fetch(`${this.url}/v1/patients/${PATIENT}/documents`, { method: 'POST', headers: this.headers(), body: JSON.stringify({ fileName, path: this.folder }) });
      id = ((await created.json()) as { id: string }).id;
    }
    const form = new FormData();
    form.append('Id', id);
    form.append('Type', 'BIN');
    form.append('file', new Blob([new Uint8Array(bytes)]), fileName);
    const stored = await fetch(`${this.url}/storage/v1/documents/${id}/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.bearer}`, ...(options.ifMatch ? { 'if-match': `"${options.ifMatch}"` } : {}) },
      body: form,
    });
    return { status: stored.status, body: await stored.json() };
  }

  /** An upload that must be stored (201), or the test fails saying what the server answered. */
  async uploaded(fileName: string, bytes: Buffer, options: { documentId?: string; ifMatch?: string } = {}): Promise<Uploaded> {
    const { status, body } = await this.upload(fileName, bytes, options);
    if (status !== 201) throw new Error(`upload of ${fileName}: ${status} ${JSON.stringify(body)}`);
    return body as Uploaded;
  }

  async search(body: Record<string, unknown>): Promise<{ documents: any[]; total: number }> {
    const response = await fetch(`${this.url}/v1/patients/${PATIENT}/documents/search`, { method: 'POST', headers: { ...this.headers(), 'accept-encoding': 'gzip' }, body: JSON.stringify({ offset: 0, limit: 100, ...body }) });
    if (response.status !== 200) throw new Error(`search: ${response.status} ${await response.text()}`);
    return (await response.json()) as { documents: any[]; total: number };
  }

  async get(id: string): Promise<any> {
    return (await fetch(`${this.url}/v1/patients/${PATIENT}/documents/${id}`, { headers: this.headers() })).json();
  }

  async versions(id: string): Promise<any[]> {
    const response = await fetch(`${this.url}/v1/patients/${PATIENT}/documents/${id}/versions`, { headers: this.headers() });
    if (response.status !== 200) throw new Error(`versions: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { versions: any[] }).versions;
  }
}
