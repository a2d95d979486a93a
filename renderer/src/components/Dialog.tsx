import { useEffect, useRef, type ReactNode } from 'react';
import { Icon } from './Icon.js';

/** A modal on the native <dialog>: focus trap, Escape and the backdrop come from the browser. */
export function Dialog({ title, open, onClose, children, wide }: { title: string; open: boolean; onClose: () => void; children: ReactNode; wide?: boolean }) {
  const dialogRef = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = dialogRef.current;
    if (!dialog) return;
    if (!open) {
      if (dialog.open) dialog.close();
      return;
    }
    // The element that opened the dialog gets the focus back when it closes, also when the dialog
    // leaves the page without being closed (a preview unmounted by its screen).
    const opener = document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null;
    if (!dialog.open) dialog.showModal();
    // The browser focuses the first control (the Close button); a dialog that starts with a field to
    // fill in names it with data-autofocus, so typing starts there.
    dialog.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    return () => {
      if (dialog.open) dialog.close();
      // An opener that left the page meanwhile (the empty list's "Add folder" once a folder is
      // added): the focus goes to the start of the screen's content instead of being lost.
      if (opener?.isConnected) opener.focus();
      else document.getElementById('main')?.focus();
    };
  }, [open]);
  return (
    <dialog ref={dialogRef} className={wide ? 'dialog dialog-wide' : 'dialog'} aria-label={title} onClose={onClose} onCancel={onClose}>
      {open ? (
        <>
          <header className="dialog-header">
            <h2>{title}</h2>
            <button type="button" className="icon-button" onClick={onClose} aria-label="Close">
              <Icon name="close" />
            </button>
          </header>
          <div className="dialog-body">{children}</div>
        </>
      ) : null}
    </dialog>
  );
}
