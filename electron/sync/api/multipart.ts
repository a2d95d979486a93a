/**
 * A multipart/form-data body (SPEC §4.2) whose file part streams from disk between a head (the
 * fields and the file part's header) and a tail (the closing boundary). Its length is known up
 * front, so the request carries Content-Length and the server can refuse a too-large upload (413)
 * before reading it.
 */
import { randomBytes } from 'node:crypto';

export interface MultipartFraming {
  contentType: string;
  /** Sent before the file's bytes. */
  head: Buffer;
  /** Sent after them. */
  tail: Buffer;
}

export interface MultipartInput {
  fields: Record<string, string>;
  file: { field: string; fileName: string; contentType: string };
}

export function multipartFraming(input: MultipartInput): MultipartFraming {
  const boundary = `----patient-docs-${randomBytes(16).toString('hex')}`;
  const fieldParts = Object.entries(input.fields).map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`,
  );
  const head = Buffer.from(
    `${fieldParts.join('')}--${boundary}\r\nContent-Disposition: form-data; name="${quote(input.file.field)}"; filename="${quote(input.file.fileName)}"; filename*=UTF-8''${encodeURIComponent(input.file.fileName)}\r\nContent-Type: ${input.file.contentType}\r\n\r\n`,
    'utf8',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  return { contentType: `multipart/form-data; boundary=${boundary}`, head, tail };
}

/** Multipart header values are quoted strings: escape the quote and drop line breaks. */
function quote(value: string): string {
  return value.replace(/["\\]/g, (match) => `\\${match}`).replace(/[\r\n]/g, ' ');
}
