/*
 * test_error.c - errors say what failed, then where, git style.
 */
#include "unit.h"

Test(error, formats_message_member_and_offset_git_style)
{
	ti_error e;
	ti_error_clear(&e);
	EXPECT_INT(e.offset, -1);
	EXPECT_INT(TI_FAIL(&e, TI_E_CORRUPT, "bad pickle opcode 0x%02x", 0xff), TI_E_CORRUPT);
	ti_error_at(&e, "archive/data.pkl", 1234);
	char buf[512];
	ti_error_format(&e, buf, sizeof(buf));
	EXPECT_STR(buf, "bad pickle opcode 0xff in 'archive/data.pkl' at offset 1234");
	/* the first location set wins: the innermost caller knows best */
	ti_error_at(&e, "other", 5);
	ti_error_format(&e, buf, sizeof(buf));
	EXPECT_STR(buf, "bad pickle opcode 0xff in 'archive/data.pkl' at offset 1234");
	cr_expect(e.source_line > 0 && e.source_file != NULL, "no source location recorded");
}

Test(error, statuses_have_stable_names)
{
	EXPECT_STR(ti_status_name(TI_OK), "success");
	EXPECT_STR(ti_status_name(TI_E_CORRUPT), "corrupt input");
	EXPECT_STR(ti_status_name(TI_E_LIMIT), "limit exceeded");
	EXPECT_STR(ti_status_name((ti_status)99), "unknown error");
}
