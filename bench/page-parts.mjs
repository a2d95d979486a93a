// What two parts of an uncached search page cost, each beside the ways tried instead of it, in
// instructions counted by valgrind (callgrind) in a process of its own: a signed link (Links.signed,
// createHmac) against HMAC-SHA256 as two one-shot `crypto.hash` calls over precomputed key pads
// (RFC 2104, checked byte for byte against createHmac first), and a page of 50 documents written as
// JSON into one buffer: JSON.stringify, fast-json-stringify compiled from SearchResponse, and a
// template that escapes only some fields (checked equal to JSON.stringify first). Each variant runs
// twice, with `base` and `base + count` operations; the difference over `count` is one operation's
// cost, start-up and compilation left out. Instruction counts move by a few percent between runs where
// time on the shared 2-core machine moves by ±20%. Needs valgrind (Debian package `valgrind`).
//   node bench/page-parts.mjs                                    (after npm run build)
import { execFileSync, spawnSync } from 'node:child_process';
import { createHmac, hash, randomBytes } from 'node:crypto';
import fastJson from 'fast-json-stringify';
import { Links } from '../dist/server/domain/links.js';
import { SearchResponse } from '../dist/shared/schemas.js';

/** Operations run before the counted ones (so the optimizing compiler's work stays out), then counted. */
const LINK_OPERATIONS = { base: 5000, count: 20_000 };
const PAGE_OPERATIONS = { base: 300, count: 600 };
const key = randomBytes(32);
const links = new Links('http://127.0.0.1:34567', key);
const holder = { clientId: 'reception-workstation-3', organizationId: '0190f3c2-aaaa-7bbb-8ccc-000000000999' };
const uuid = (n) => `0190f3c2-aaaa-7bbb-8ccc-${String(123456789000 + n).padStart(12, '0')}`;

/** HMAC-SHA256 (RFC 2104) as two one-shot hashes: H(K ⊕ opad ‖ H(K ⊕ ipad ‖ text)). */
const innerPad = Buffer.alloc(64, 0x36);
const outerPad = Buffer.alloc(64, 0x5c);
for (let i = 0; i < key.length; i += 1) {
  innerPad[i] ^= key[i];
  outerPad[i] ^= key[i];
}
function oneShotHmac(text) {
  const inner = hash('sha256', Buffer.concat([innerPad, Buffer.from(text)]), 'buffer');
  return hash('sha256', Buffer.concat([outerPad, inner]), 'base64url');
}
const linkText = (n) => `link-v2\n${uuid(n)}\n${n % 9}\ncontent\n1790000040\n${holder.clientId}\n${holder.organizationId}`;

/** A page of 50 documents with content and a thumbnail, as DocumentService.toDto makes them. */
const documents = Array.from({ length: 50 }, (_, n) => ({
  id: uuid(n),
  storageUrl: links.storageUrl(uuid(n)),
  fileName: `Oberkiefer ${n} Überprüfung "vorher".stl`,
  fileType: 'STL',
  path: `/cases/case-${String(n).padStart(5, '0')}`,
  lastModifiedAt: '2026-11-20T16:45:00.000Z',
  createdAt: '2026-11-20T16:44:58.123Z',
  hasContent: true,
  fileSize: 12_345_678 + n,
  sha256: 'ab'.repeat(32),
  version: 1 + (n % 3),
  storageDownloadUri: links.signed(uuid(n), 1, 'content', holder),
  thumbnailDownloadUri: links.signed(uuid(n), 1, 'thumbnail', holder),
  scannedAt: n % 2 ? '2026-11-20T16:40:00.000Z' : null,
}));
const page = { documents, offset: 0, limit: 50, total: 100 };
const json = (value) => (value === null ? 'null' : JSON.stringify(value));
const plain = (value) => (value === null ? 'null' : `"${value}"`);
/** Links, ids, timestamps and digests as they are; the other text through JSON.stringify. */
const fieldsBy = (text) => (d) =>
  `{"id":"${d.id}","storageUrl":"${d.storageUrl}","fileName":${json(d.fileName)},"fileType":${json(d.fileType)},"path":${json(d.path)},"lastModifiedAt":${text(d.lastModifiedAt)},"createdAt":${text(d.createdAt)},"hasContent":${d.hasContent},"fileSize":${d.fileSize},"sha256":${text(d.sha256)},"version":${d.version},"storageDownloadUri":${plain(d.storageDownloadUri)},"thumbnailDownloadUri":${plain(d.thumbnailDownloadUri)},"scannedAt":${text(d.scannedAt)}}`;
const template = (documentJson) => () =>
  Buffer.from(`{"documents":[${page.documents.map(documentJson).join(',')}],"offset":${page.offset},"limit":${page.limit},"total":${page.total}}`);
const compiled = fastJson(SearchResponse);

const variants = {
  'a signed link: createHmac (Links.signed)': () => links.signed(uuid(7), 1, 'content', holder),
  'a signed link: two one-shot crypto.hash': () => oneShotHmac(linkText(7)),
  'a page: JSON.stringify': () => Buffer.from(JSON.stringify(page)),
  'a page: fast-json-stringify (SearchResponse)': () => Buffer.from(compiled(page)),
  'a page: template, stored text through JSON.stringify': template(fieldsBy(json)),
  'a page: template, only file name, type and path escaped': template(fieldsBy(plain)),
};

if (process.argv[2] === '--run') {
  const run = variants[process.argv[3]];
  for (let n = Number(process.argv[4]); n > 0; n -= 1) run();
  process.exit(0);
}

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  console.log('page-parts bench: skipped, valgrind is not installed (apt-get install valgrind)');
  process.exit(0);
}
for (let n = 0; n < 1000; n += 1) {
  if (oneShotHmac(linkText(n) + 'é'.repeat(n % 7)) !== createHmac('sha256', key).update(linkText(n) + 'é'.repeat(n % 7)).digest('base64url')) throw new Error('one-shot HMAC differs');
}
const expected = variants['a page: JSON.stringify']();
for (const [name, run] of Object.entries(variants)) {
  if (name.startsWith('a page') && !run().equals(expected)) throw new Error(`${name}: not the bytes JSON.stringify writes`);
}

function instructions(name, operations) {
  const { stderr } = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, import.meta.filename, '--run', name, String(operations)], { encoding: 'utf8' });
  return Number(/Collected : (\d+)/.exec(stderr)[1]);
}
console.log(`instructions per operation (callgrind): ${LINK_OPERATIONS.count} links after ${LINK_OPERATIONS.base}, ${PAGE_OPERATIONS.count} pages after ${PAGE_OPERATIONS.base}; a page is ${expected.length.toLocaleString('en')} bytes`);
console.log('| operation | instructions |');
console.log('|---|---:|');
for (const name of Object.keys(variants)) {
  const { base, count } = name.startsWith('a page') ? PAGE_OPERATIONS : LINK_OPERATIONS;
  const each = (instructions(name, base + count) - instructions(name, base)) / count;
  console.log(`| ${name} | ${Math.round(each).toLocaleString('en')} |`);
}
