import { visibleName } from '../../../../shared/names.js';
import { useBridgeEvent, useBridgeQuery } from '../../bridge/context.js';
import { EmptyState } from '../../components/EmptyState.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { formatDateTime } from '../../format.js';

const LIMIT = 1000;

/** Every scanner case given to a patient: when, by whom (the computer's account), automatic or confirmed, and on what evidence. */
export function CaseAssignments() {
  const assignments = useBridgeQuery((client) => client.caseAssignments(LIMIT), []);
  useBridgeEvent((event) => {
    if (event.type === 'cases') void assignments.reload();
  });
  if (assignments.error) return <ErrorNotice error={assignments.error} />;
  if (assignments.data && assignments.data.length === 0) {
    return (
      <EmptyState icon="folderOpen" title="No case assigned yet">
        Each case of a scanner inbox filed under a patient is recorded here: automatically on a chart number or patient id, or confirmed by staff.
      </EmptyState>
    );
  }
  return (
    <table className="data-table" aria-label="Case assignments">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Case</th>
          <th scope="col">Patient</th>
          <th scope="col">How</th>
          <th scope="col">Evidence</th>
        </tr>
      </thead>
      <tbody>
        {assignments.data?.map((assignment) => (
          <tr key={assignment.id}>
            <td className="tabular nowrap">{formatDateTime(assignment.at)}</td>
            <td>
              {visibleName(assignment.caseName)}
              <span className="muted small"> in {assignment.inboxFolder}</span>
            </td>
            <td>
              {visibleName(assignment.patientName ?? assignment.patientId)}
              {assignment.previousPatientId ? <span className="muted small"> (changed before any upload)</span> : null}
            </td>
            <td>
              {assignment.how === 'automatic' ? 'Automatic' : 'Confirmed'} by {assignment.by}
            </td>
            <td className="small">{assignment.evidence.join('; ') || '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
