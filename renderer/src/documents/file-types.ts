import type { IconName } from '../components/Icon.js';

export const MODEL_TYPES = ['STL', 'PLY', 'OBJ'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

export function isModelType(fileType: string): fileType is ModelType {
  return (MODEL_TYPES as readonly string[]).includes(fileType.toUpperCase());
}

export function fileTypeOf(fileName: string): string {
  const dot = fileName.lastIndexOf('.');
  return dot > 0 ? fileName.slice(dot + 1).toUpperCase() : 'BIN';
}

export function fileIcon(fileNameOrType: string): IconName {
  const type = fileNameOrType.includes('.') ? fileTypeOf(fileNameOrType) : fileNameOrType.toUpperCase();
  if (isModelType(type)) return 'cube';
  if (type === 'PDF') return 'filePdf';
  if (type === 'PNG' || type === 'JPG' || type === 'JPEG' || type === 'DCM') return 'image';
  return 'file';
}

/** Names clinic staff recognise, for the type filter and the details panel. */
export const TYPE_DESCRIPTIONS: Record<string, string> = {
  STL: '3D scan (STL)',
  PLY: '3D scan (PLY)',
  OBJ: '3D model (OBJ)',
  PDF: 'PDF document',
  DCM: 'DICOM image',
  JPG: 'JPEG photo',
  JPEG: 'JPEG photo',
  PNG: 'PNG image',
};

export function describeType(fileType: string): string {
  return TYPE_DESCRIPTIONS[fileType] ?? `${fileType} file`;
}
