import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dicomFile, writeDicomSeries, writeIteroCase, writeLoosePdf, writeMeditCase, writeThreeShapeCase } from '../../../test/fixtures/scanner-cases.js';
import { describeEvidence } from './evidence.js';
import { evidenceFromDicomHead } from './dicom-header.js';
import { checkRule, evidenceFromName } from './folder-rules.js';
import { readCase } from './read-case.js';

const inbox = mkdtempSync(path.join(tmpdir(), 'inbox-read-'));
afterAll(() => rmSync(inbox, { recursive: true, force: true }));

const lines = async (name: string, rules: string[] = []) => (await readCase(inbox, name, rules))!.evidence.map(describeEvidence);

describe('what a case says about its patient', () => {
  it('reads the patient of an iTero export, not its doctor', async () => {
    const name = writeIteroCase(inbox, '40012345', { family: 'Armour', given: 'Theo', chart: '10231', birthDate: '1984-02-29' });
    const scan = (await readCase(inbox, name, []))!;
    expect(scan).toMatchObject({ isFolder: true, fileCount: 3, scanner: 'iTero' });
    expect(scan.evidence.map(describeEvidence)).toEqual([
      'order number in folder name: 40012345',
      'order number in iTero export: 40012345',
      'chart number in iTero export: 10231',
      'name in iTero export: Armour, Theo',
      'birth date in iTero export: 1984-02-29',
    ]);
  });

  it('reads 3Shape property pairs and Medit names', async () => {
    const threeShape = writeThreeShapeCase(inbox, { family: 'Müller', given: 'Zoë', chart: 'A-77', birthDate: '1990-01-02' });
    expect(await lines(threeShape)).toEqual(['order number in 3Shape order: 3S-0042', 'chart number in 3Shape order: A-77', 'name in 3Shape order: Müller, Zoë', 'birth date in 3Shape order: 1990-01-02']);
    expect((await readCase(inbox, threeShape, []))!.scanner).toBe('3Shape');
    const medit = writeMeditCase(inbox, 'medit case 7', { family: "O'Brien", given: 'Jane' });
    expect(await lines(medit)).toEqual(["name in Medit order: Jane O'Brien"]);
  });

  it('reads the patient tags of a DICOM series from its headers only', async () => {
    const name = writeDicomSeries(inbox, 'CBCT_0001', { patientId: '10231', patientName: 'Armour^Theo', birthDate: '19840229' }, 5, 200_000);
    const scan = (await readCase(inbox, name, []))!;
    expect(scan).toMatchObject({ fileCount: 5, scanner: 'DICOM' });
    expect(scan.evidence.map(describeEvidence)).toEqual(['chart number in DICOM header: 10231', 'name in DICOM header: Armour, Theo', 'birth date in DICOM header: 1984-02-29']);
    // Cut inside the pixel data: the header before it is still read.
    expect(evidenceFromDicomHead(dicomFile({ patientId: '7', patientName: 'Roe^Jane' }, 1, 500_000).subarray(0, 2000)).map(describeEvidence)).toEqual([
      'chart number in DICOM header: 7',
      'name in DICOM header: Roe, Jane',
    ]);
  });

  it('applies the clinic rules to folder and file names; a loose PDF is a case of its own', async () => {
    const pdf = writeLoosePdf(inbox, '10231_ceph-report.pdf');
    expect(await lines(pdf, ['{chart}_*'])).toEqual(['chart number in file name: 10231']);
    expect(await lines(pdf)).toEqual([]);
    expect((await readCase(inbox, pdf, []))!).toMatchObject({ isFolder: false, fileCount: 1, scanner: 'PDF' });
    expect(evidenceFromName('Armour_Theo_19840229_scan', false, ['{last}_{first}_{birth}_*']).map(describeEvidence)).toEqual([
      'name in folder name: Armour, Theo',
      'birth date in folder name: 1984-02-29',
    ]);
    expect(evidenceFromName('9b2f7a0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b_upper', false, []).map(describeEvidence)).toEqual(['patient id in folder name: 9b2f7a0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b']);
    // A rule for chart numbers reads none from a name without a digit (a scanner's own folder name, a surname).
    expect(evidenceFromName('OrthoCAD_Export_4001', false, ['{chart}_*']).map(describeEvidence)).toEqual(['order number in folder name: 4001']);
    expect(evidenceFromName('Armour_Theo_2026-11-28', false, ['{chart}_*'])).toEqual([]);
    expect(checkRule('{chart}_*')).toBeUndefined();
    expect(checkRule('{patient}_*')).toMatch(/Unknown part \{patient\}/);
  });

  it('never guesses a date written day-first or month-first', async () => {
    const folder = mkdtempSync(path.join(inbox, 'ambiguous-'));
    writeFileSync(path.join(folder, 'order.xml'), '<Order><Patient><FirstName>Jo</FirstName><LastName>Lee</LastName><DateOfBirth>04/02/1980</DateOfBirth></Patient></Order>');
    expect(await lines(path.basename(folder))).toEqual(['name in order file: Lee, Jo']);
  });
});
