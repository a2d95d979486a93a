/**
 * The audit log on a data disk that fills up (a real tmpfs of 16 MiB as the data directory, as in
 * srv-disk-full): reads go on while the entries wait in memory; past the limit
 * (PATIENT_DOCS_AUDIT_MAX_PENDING, 40 here) access to patient files is refused with 503 and a
 * plain reason; once space is freed, every waiting entry is written — none is dropped — and access
 * is given again, with no restart.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillDisk } from './helpers/disk.js';
import { ADMIN_TOKEN, expectProblem, PATIENT, startTestServer, type TestServer } from './helpers/server.js';

const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-audit-full-'));
const filler = path.join(mountPoint, 'filler');
let mounted = false;
let server: TestServer;

beforeAll(async () => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mountPoint]);
  mounted = true;
  server = await startTestServer({ PATIENT_DOCS_DATA_DIR: path.join(mountPoint, 'data'), PATIENT_DOCS_AUDIT_MAX_PENDING: '40' });
});

afterAll(async () => {
  try {
    await server?.close();
  } finally {
    if (mounted) execFileSync('umount', ['-l', mountPoint]);
    fs.rmSync(mountPoint, { recursive: true, force: true });
  }
});


async function searches(): Promise<number> {
  const response = await fetch(`${server.url}/admin/v1/audit?action=search&patientId=${PATIENT}&limit=1`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { total: number }).total;
}

describe('the audit log cannot be written (disk full)', () => {
  it('keeps the entries, refuses access past the limit with 503, and writes every entry once space is freed', async () => {
    const search = () => server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { path: '/' } });
    expect((await search()).status).toBe(200);
    const before = await searches();
    expect(before).toBe(1);

    fillDisk(filler);
    let answered = 0;
    let refused: Awaited<ReturnType<typeof search>> | undefined;
    try {
      // Searches only read: they are answered while their entries wait, until too many wait.
      for (let attempt = 0; attempt < 2000 && !refused; attempt += 1) {
        const response = await search();
        if (response.status === 200) answered += 1;
        else refused = response;
      }
      expect(refused).toBeDefined();
      const problem = expectProblem(refused!, 503);
      expect(problem.detail).toMatch(/access to patient files is not given right now, because the server cannot record it in its audit log/);
      expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(server.server.context.audit.pendingCount()).toBeGreaterThanOrEqual(40);
      // Refused for the same reason: a download link, an upload, a placeholder.
      expect((await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'x.pdf' } })).status).toBe(503);
    } finally {
      fs.rmSync(filler, { force: true });
    }

    // Space is back: the waiting entries are written by the retries, and access is given again.
    const deadline = Date.now() + 15_000;
    let again = await search();
    while (again.status === 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      again = await search();
    }
    expect(again.status).toBe(200);
    answered += 1;
    expect(await searches()).toBe(before + answered);
  }, 60_000);
});
