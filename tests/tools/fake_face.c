/*  fake_face.c - an empty shared library that stands in for the mpicollab
    faces in collab-run's tests, which check how collab-run sets
    LD_PRELOAD / LD_LIBRARY_PATH without depending on the real library. */
int collab_tools_test_fake_face(void);

int collab_tools_test_fake_face(void)
{
    return 42;
}
