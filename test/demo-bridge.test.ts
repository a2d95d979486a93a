// The in-browser demo (`npm run dev`, `?demo`) lays screens out without a server: it must show the
// states staff meet, in the shapes the server sends them, or a screen is laid out for data that never comes.
import { describe, expect, it } from 'vitest';
import { createAjv } from '../shared/ajv.js';
import { DocumentSchema, DocumentVersionSchema } from '../shared/schemas.js';
import { createDemoBridge } from '../renderer/src/bridge/demo.js';

describe('the demo bridge', () => {
  it('has one document whose current stored file is lost on the server, with an earlier version that still downloads', async () => {
    const demo = createDemoBridge({ documents: 240, state: '' });
    const [patient] = (await demo.listPatients({})).patients;
    const page = await demo.searchDocuments(patient!.id, { path: '/scans/2026-02-11 Bite registration', offset: 0, limit: 100 });
    const lost = page.documents.filter((document) => !document.hasContent && document.version > 0);
    expect(lost.map((document) => document.fileName)).toEqual(['Bite registration 0001.stl']);
    // As the server shows it after `verify --mark-lost`: no content, size, checksum or links; its version kept.
    expect(lost[0]).toMatchObject({ version: 2, fileSize: null, sha256: null, storageDownloadUri: null, thumbnailDownloadUri: null });

    const versions = await demo.documentVersions(patient!.id, lost[0]!.id);
    const ajv = createAjv();
    expect(ajv.validate(DocumentSchema, lost[0]), JSON.stringify(ajv.errors)).toBe(true);
    for (const version of versions) expect(ajv.validate(DocumentVersionSchema, version), JSON.stringify(ajv.errors)).toBe(true);
    expect(versions.map(({ version, current, contentLostAt, storageDownloadUri }) => ({ version, current, lost: contentLostAt !== null, link: storageDownloadUri !== null }))).toEqual([
      { version: 2, current: false, lost: true, link: false },
      { version: 1, current: false, lost: false, link: true },
    ]);
    // Lost after it was uploaded.
    expect(Date.parse(versions[0]!.contentLostAt!)).toBeGreaterThan(Date.parse(versions[0]!.uploadedAt));
  });
});
