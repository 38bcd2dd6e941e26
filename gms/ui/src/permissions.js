// Whether the signed-in principal may change an entity's USER metadata. Every token the
// server accepts today is the admin's; principals with grants come with authorization.

export async function canWrite() {
  return true;
}
