import { percent } from '../format.js';

export function ProgressBar({ done, total, tone = 'progress', label, size = 'regular' }: { done: number; total: number; tone?: string; label: string; size?: 'regular' | 'thin' }) {
  const value = Math.round(percent(done, total));
  return (
    <div className={`progress progress-${size} tone-${tone}`} role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={value}>
      <div className="progress-fill" style={{ width: `${percent(done, total)}%` }} />
    </div>
  );
}
