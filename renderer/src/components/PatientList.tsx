import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { visibleName } from '../../../shared/names.js';
import type { PatientDto } from '../../../shared/schemas.js';
import { useBridgeQuery } from '../bridge/context.js';
import { ErrorNotice } from './ErrorNotice.js';
import { Icon } from './Icon.js';

const SEARCH_DELAY_MS = 200;

function useDebounced<T>(value: T, delay: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), delay);
    return () => clearTimeout(timer);
  }, [value, delay]);
  return debounced;
}

/** Search by name and pick one patient; the server decides which patients this clinic may see. */
export function PatientList({ selectedId, onSelect, label = 'Find a patient', compact, autoFocus }: { selectedId: string | null; onSelect: (patient: PatientDto) => void; label?: string; compact?: boolean; autoFocus?: boolean }) {
  const [name, setName] = useState('');
  const query = useDebounced(name.trim(), SEARCH_DELAY_MS);
  const patients = useBridgeQuery((client) => client.listPatients({ name: query || undefined, limit: 100 }), [query]);
  const inputId = `patient-search-${compact ? 'compact' : 'full'}`;
  const listRef = useRef<HTMLUListElement>(null);
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
        <input id={inputId} type="search" placeholder={label} value={name} onChange={(event) => setName(event.target.value)} onKeyDown={(event) => moveFocus(event, 'search')} autoComplete="off" data-autofocus={autoFocus ? '' : undefined} />
      </div>
      {patients.error ? <ErrorNotice error={patients.error} /> : null}
      {/* A list of buttons (not a listbox: an option may not hold a button); the one chosen is aria-current. */}
      <ul ref={listRef} className="patient-options" aria-label="Patients" onKeyDown={(event) => moveFocus(event, 'list')}>
        {patients.data?.patients.map((patient) => (
          <li key={patient.id}>
            <button type="button" className={patient.id === selectedId ? 'patient-option selected' : 'patient-option'} aria-current={patient.id === selectedId ? 'true' : undefined} onClick={() => onSelect(patient)}>
              <span className="avatar" aria-hidden="true">
                {initials(patient.name)}
              </span>
              <span className="truncate" title={visibleName(patient.name)}>
                {visibleName(patient.name)}
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
