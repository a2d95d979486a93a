import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { visibleName } from '../../../shared/names.js';
import { CHART_SYSTEM, distinguishingIdentifier, readPatientSearch } from '../../../shared/patient-identifiers.js';
import type { BridgeClient } from '../../../shared/bridge.js';
import type { PatientDto, PatientListResponse } from '../../../shared/schemas.js';
import { useBridgeQuery } from '../bridge/context.js';
import { ErrorNotice } from './ErrorNotice.js';
import { Icon } from './Icon.js';
import { formatDate } from '../format.js';

const SEARCH_DELAY_MS = 200;

function useDebounced<T>(value: T, delay: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), delay);
    return () => clearTimeout(timer);
  }, [value, delay]);
  return debounced;
}

/** Whether this computer writes a date day first (02.03.1984, 02/03/1984) rather than month first. */
const DAY_FIRST = (() => {
  const parts = new Intl.DateTimeFormat(undefined).formatToParts(new Date(Date.UTC(2000, 10, 22, 12)));
  return parts.findIndex((part) => part.type === 'day') < parts.findIndex((part) => part.type === 'month');
})();

/**
 * The patients a search box's text finds: by name (any word order), narrowed by a birth date typed
 * among the words; a lone word with a digit is also looked up as a chart number, and the patient
 * with that chart comes first.
 */
async function findPatients(client: BridgeClient, text: string, limit: number): Promise<PatientListResponse> {
  const search = readPatientSearch(text, { dayFirst: DAY_FIRST });
  const byName = client.listPatients({ name: search.name, birthDate: search.birthDate, limit });
  if (search.chart === undefined) return byName;
  const [byChart, named] = await Promise.all([client.listPatients({ identifier: `${CHART_SYSTEM}|${search.chart}`, birthDate: search.birthDate, limit }), byName]);
  const patients = [...byChart.patients, ...named.patients.filter((patient) => !byChart.patients.some((charted) => charted.id === patient.id))];
  return { ...named, patients, total: patients.length };
}

/** Search by name, chart number or birth date and pick one patient; the server decides which patients this clinic may see. */
export function PatientList({ selectedId, onSelect, label = 'Find a patient', compact, autoFocus }: { selectedId: string | null; onSelect: (patient: PatientDto) => void; label?: string; compact?: boolean; autoFocus?: boolean }) {
  const [name, setName] = useState('');
  const query = useDebounced(name.trim(), SEARCH_DELAY_MS);
  const patients = useBridgeQuery((client) => findPatients(client, query, 100), [query]);
  const inputId = `patient-search-${compact ? 'compact' : 'full'}`;
  const listRef = useRef<HTMLUListElement>(null);
  const shown = patients.data?.patients ?? [];
  // One Tab stop for the whole list (the arrow keys move within it): the patient last focused, else the chosen one, else the first.
  const [focusedId, setFocusedId] = useState<string | null>(null);
  const shortIds = useMemo(() => shortPatientIds(shown.map((patient) => patient.id)), [shown]);
  const tabStop = [focusedId, selectedId].find((id) => id !== null && shown.some((patient) => patient.id === id)) ?? shown[0]?.id ?? null;
  // ↑/↓ (and Home/End) move between the patients; ↓ from the search box goes into the list.
  const moveFocus = (event: KeyboardEvent, from: 'search' | 'list') => {
    const options = [...(listRef.current?.querySelectorAll<HTMLButtonElement>('.patient-option') ?? [])];
    if (options.length === 0) return;
    const current = options.indexOf(document.activeElement as HTMLButtonElement);
    const targets: Record<string, number> = from === 'search' ? { ArrowDown: 0 } : { ArrowDown: current + 1, ArrowUp: current - 1, Home: 0, End: options.length - 1 };
    if (!(event.key in targets)) return;
    event.preventDefault();
    const next = targets[event.key]!;
    if (next < 0) document.getElementById(inputId)?.focus();
    else options[Math.min(options.length - 1, next)]!.focus();
  };
  return (
    <div className={compact ? 'patient-list compact' : 'patient-list'}>
      <label htmlFor={inputId} className="visually-hidden">
        {label}
      </label>
      <div className="search-input">
        <Icon name="search" size={16} />
        <input id={inputId} type="search" placeholder={label} title="A name (any word order), a chart number or a birth date" value={name} onChange={(event) => setName(event.target.value)} onKeyDown={(event) => moveFocus(event, 'search')} autoComplete="off" data-autofocus={autoFocus ? '' : undefined} />
      </div>
      {patients.error ? <ErrorNotice error={patients.error} /> : null}
      {/* A list of buttons (not a listbox: an option may not hold a button); the one chosen is aria-current. */}
      <ul ref={listRef} className="patient-options" aria-label="Patients" onKeyDown={(event) => moveFocus(event, 'list')} onFocus={(event) => setFocusedId((event.target as HTMLElement).closest<HTMLElement>('.patient-option')?.dataset.patientId ?? null)}>
        {shown.map((patient) => (
          <li key={patient.id}>
            <button
              type="button"
              className={patient.id === selectedId ? 'patient-option selected' : 'patient-option'}
              aria-current={patient.id === selectedId ? 'true' : undefined}
              data-patient-id={patient.id}
              tabIndex={patient.id === tabStop ? 0 : -1}
              aria-describedby={`patient-detail-${inputId}-${patient.id}`}
              onClick={() => onSelect(patient)}
            >
              <span className="avatar" aria-hidden="true">
                {initials(patient.name)}
              </span>
              <span className="patient-option-text">
                <span className="truncate" title={visibleName(patient.name)}>
                  {visibleName(patient.name)}
                </span>
                {/* The button's description, not its name: staff (and speech input) name a patient by name. */}
                <span className="patient-option-detail muted small" id={`patient-detail-${inputId}-${patient.id}`} aria-hidden="true">
                  {patientDetail(patient, shortIds)}
                </span>
              </span>
            </button>
          </li>
        ))}
        {patients.data && patients.data.patients.length === 0 ? <li className="muted small patient-none">No patient matches “{query}”.</li> : null}
      </ul>
    </div>
  );
}

export function initials(name: string): string {
  const words = name.split(/\s+/).filter((word) => /\p{L}/u.test(word));
  return ((words[0]?.[0] ?? '') + (words.length > 1 ? (words[words.length - 1]?.[0] ?? '') : '')).toUpperCase() || '?';
}

/**
 * The second line that tells two patients of the same name apart: the birth date and the chart
 * number (or the first identifier) when the server gives them, else the short form of the id.
 */
export function patientDetail(patient: PatientDto, shortIds: ReadonlyMap<string, string>): string {
  const parts: string[] = [];
  if (patient.birthDate) parts.push(`Born ${formatDate(patient.birthDate)}`);
  const identifier = distinguishingIdentifier(patient.identifiers);
  if (identifier) parts.push(identifier.system === CHART_SYSTEM ? `Chart ${visibleName(identifier.value)}` : `${visibleName(identifier.system)} ${visibleName(identifier.value)}`);
  return parts.length > 0 ? parts.join(' · ') : `ID ${shortIds.get(patient.id) ?? patient.id}`;
}

/**
 * Each id's short form: its first 8 characters, unless another listed patient's id begins the same
 * way; then its last 8 (where the ids differ), never a cut-off common part.
 */
export function shortPatientIds(ids: readonly string[]): Map<string, string> {
  const prefixes = new Map<string, number>();
  for (const id of ids) prefixes.set(id.slice(0, 8), (prefixes.get(id.slice(0, 8)) ?? 0) + 1);
  return new Map(ids.map((id) => [id, prefixes.get(id.slice(0, 8))! > 1 ? `…${id.slice(-8)}` : id.slice(0, 8)]));
}
