/**
 * A full disk on the workstation (DESIGN §4): cheap scanner PCs have small disks, and a CBCT
 * export can fill one. The journal (SQLITE_FULL) and the settings (ENOSPC) then cannot be written.
 * That is never a file's failure: the engine holds its work, says so in plain words, and goes on by
 * itself once a journal write works again.
 */
export { isDiskFull } from '../../../shared/disk-errors.js';
