/*
 * test_scan.c - judging globals and calls, and scanning pickles, without executing them.
 *
 * The pickles are written opcode by opcode, each the smallest that shows one
 * way a payload reaches a function. A whole corpus of hostile files, with the
 * verdicts expected, is in fixtures/malicious/ (tests/scan/run.sh).
 */
#include "unit.h"

/* ---- the policy, a row per global ---- */

typedef struct policy_row {
	const char *module, *name;
	ti_scan_severity want;
} policy_row;

static const policy_row globals[] = {
	{"torch._utils", "_rebuild_tensor_v2", TI_SCAN_SAFE},
	{"torch._utils", "_rebuild_parameter_with_state", TI_SCAN_SAFE},
	{"torch", "FloatStorage", TI_SCAN_SAFE},
	{"torch", "UntypedStorage", TI_SCAN_SAFE},
	{"torch.cuda", "HalfStorage", TI_SCAN_SAFE},
	{"torch", "bfloat16", TI_SCAN_SAFE},
	{"torch", "per_channel_affine", TI_SCAN_SAFE},
	{"collections", "OrderedDict", TI_SCAN_SAFE},
	{"torch.nn.parameter", "Parameter", TI_SCAN_SAFE},
	{"_codecs", "encode", TI_SCAN_SAFE},
	{"builtins", "set", TI_SCAN_SAFE},
	{"argparse", "Namespace", TI_SCAN_UNKNOWN},
	{"numpy.core.multiarray", "_reconstruct", TI_SCAN_UNKNOWN},
	{"__main__", "Net", TI_SCAN_UNKNOWN},
	{"torch.nn.modules.linear", "Linear", TI_SCAN_UNKNOWN},
	{"builtins", "list", TI_SCAN_UNKNOWN},
	{"torch", "Storage_evil.x", TI_SCAN_UNKNOWN},
	{"torch", "FooStorage", TI_SCAN_UNKNOWN}, /* storage classes are torch's own, by name */
	{"torch.cuda", "FloatTensor", TI_SCAN_SAFE},
	{"torch.storage", "UntypedStorage", TI_SCAN_SAFE},
	{"torch", "QInt8Storage", TI_SCAN_SAFE},
	{"os", "system", TI_SCAN_DANGEROUS},
	{"posix", "system", TI_SCAN_DANGEROUS},
	{"nt", "system", TI_SCAN_DANGEROUS},
	{"os.path", "join", TI_SCAN_DANGEROUS},
	{"subprocess", "Popen", TI_SCAN_DANGEROUS},
	{"builtins", "eval", TI_SCAN_DANGEROUS},
	{"builtins", "getattr", TI_SCAN_DANGEROUS},
	{"builtins", "__import__", TI_SCAN_DANGEROUS},
	{"builtins", "map", TI_SCAN_UNKNOWN}, /* the function it applies is a global judged on its own */
	{"runpy", "_run_code", TI_SCAN_DANGEROUS},
	{"importlib", "import_module", TI_SCAN_DANGEROUS},
	{"pickle", "loads", TI_SCAN_DANGEROUS},
	{"_pickle", "loads", TI_SCAN_DANGEROUS},
	{"marshal", "loads", TI_SCAN_DANGEROUS},
	{"types", "CodeType", TI_SCAN_DANGEROUS},
	{"operator", "attrgetter", TI_SCAN_DANGEROUS},
	{"functools", "partial", TI_SCAN_DANGEROUS},
	{"torch.serialization", "load", TI_SCAN_DANGEROUS},
	{"torch", "load", TI_SCAN_DANGEROUS},
	{"pkgutil", "resolve_name", TI_SCAN_DANGEROUS},
	{"webbrowser", "open", TI_SCAN_DANGEROUS},
	{"ctypes", "CDLL", TI_SCAN_DANGEROUS},
	{"socket", "create_connection", TI_SCAN_DANGEROUS},
	{"shutil", "rmtree", TI_SCAN_DANGEROUS},
	{"sys", "modules", TI_SCAN_DANGEROUS},
	/* Python resolves a dotted name attribute by attribute (protocol 4) */
	{"torch", "serialization.os.system", TI_SCAN_DANGEROUS},
	{"collections", "OrderedDict.__init__.__globals__", TI_SCAN_DANGEROUS},
	{"copyreg", "extension_42", TI_SCAN_SUSPICIOUS},
	/* builtins by what they can do: plain functions and constructors are unknown, not dangerous */
	{"builtins", "len", TI_SCAN_UNKNOWN},
	{"builtins", "dict", TI_SCAN_UNKNOWN},
	{"builtins", "print", TI_SCAN_UNKNOWN},
	{"builtins", "ValueError", TI_SCAN_UNKNOWN},
	{"builtins", "set", TI_SCAN_SAFE},
	{"builtins", "compile", TI_SCAN_DANGEROUS},
	{"builtins", "__import__", TI_SCAN_DANGEROUS},
	{"builtins", "open", TI_SCAN_DANGEROUS},
	{"builtins", "setattr", TI_SCAN_DANGEROUS},
	{"builtins", "vars", TI_SCAN_DANGEROUS},
	{"builtins", "breakpoint", TI_SCAN_DANGEROUS},
	{"builtins", "input", TI_SCAN_DANGEROUS},
	{"builtins", "exit", TI_SCAN_DANGEROUS},
	{"builtins", "a_builtin_of_a_later_python", TI_SCAN_DANGEROUS},
};

Test(scan_policy, judges_each_global_as_its_row_says)
{
	for (size_t i = 0; i < sizeof(globals) / sizeof(globals[0]); i++) {
		const char *why = NULL;
		ti_scan_severity got = ti_scan_classify_global(globals[i].module, globals[i].name, &why);
		cr_expect(got == globals[i].want, "%s.%s: got %s, want %s", globals[i].module, globals[i].name,
		          ti_scan_severity_name(got), ti_scan_severity_name(globals[i].want));
		cr_expect(why && *why, "%s.%s: no reason given", globals[i].module, globals[i].name);
	}
}

typedef struct call_row {
	const char *module, *name, *opcode;
	ti_scan_severity want;
} call_row;

static const call_row calls[] = {
	{"torch._utils", "_rebuild_tensor_v2", "REDUCE", TI_SCAN_SAFE},
	{"collections", "OrderedDict", "REDUCE", TI_SCAN_SAFE},
	{"argparse", "Namespace", "NEWOBJ", TI_SCAN_UNKNOWN},
	{"argparse", "Namespace", "REDUCE", TI_SCAN_UNKNOWN},
	{"numpy.core.multiarray", "_reconstruct", "REDUCE", TI_SCAN_UNKNOWN},
	{"__main__", "Net", "NEWOBJ", TI_SCAN_UNKNOWN},
	{"__main__", "Net", "NEWOBJ_EX", TI_SCAN_UNKNOWN},
	/* REDUCE, INST and OBJ call a function the file chose */
	{"__main__", "helper", "REDUCE", TI_SCAN_DANGEROUS},
	{"mylib", "Thing", "INST", TI_SCAN_DANGEROUS},
	{"mylib", "Thing", "OBJ", TI_SCAN_DANGEROUS},
	{"os", "system", "NEWOBJ", TI_SCAN_DANGEROUS},
	/* calling a plain builtin computes a value; calling eval runs code */
	{"builtins", "len", "REDUCE", TI_SCAN_UNKNOWN},
	{"builtins", "dict", "REDUCE", TI_SCAN_UNKNOWN},
	{"builtins", "eval", "REDUCE", TI_SCAN_DANGEROUS},
};

Test(scan_policy, judges_a_call_by_its_opcode_too)
{
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		ti_scan_severity got = ti_scan_classify_call(calls[i].module, calls[i].name, calls[i].opcode, NULL);
		cr_expect(got == calls[i].want, "%s %s.%s: got %s, want %s", calls[i].opcode, calls[i].module,
		          calls[i].name, ti_scan_severity_name(got), ti_scan_severity_name(calls[i].want));
	}
}

/* ---- scanning pickles ---- */

static ti_scan_report *report;

static void teardown(void)
{
	ti_scan_report_free(report);
	report = NULL;
}

TestSuite(scan, .fini = teardown);

/* The last report stays until the next scan or the teardown: a test may scan many times. */
static ti_scan_report *scan_bytes(const char *bytes, size_t n, const ti_scan_options *opt)
{
	ti_scan_report_free(report);
	report = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_scan_buffer("test.pkl", (const uint8_t *)bytes, n, opt, &report, &err);
	cr_assert(s == TI_OK, "ti_scan_buffer: %s", err.message);
	return report;
}
#define SCAN(lit) scan_bytes((lit), sizeof(lit) - 1, NULL)

/* The first finding of this severity, or NULL. */
static const ti_scan_finding *worst_finding(const ti_scan_report *r, ti_scan_severity s)
{
	for (size_t i = 0; i < r->count; i++)
		if (r->findings[i].severity == s)
			return &r->findings[i];
	return NULL;
}

/*
 * The verdict on the pickle's own content: a bare pickle is also 'unknown' as
 * a file (torch.load cannot load it), which the tests of globals set aside.
 */
static ti_scan_severity pickle_verdict(const ti_scan_report *r)
{
	ti_scan_severity worst = TI_SCAN_SAFE;
	for (size_t i = 0; i < r->count; i++) {
		const ti_scan_finding *f = &r->findings[i];
		bool bare_note = !strcmp(f->kind, "file") && strstr(f->message, "a bare pickle, not a torch.save file");
		if (!bare_note && f->severity > worst)
			worst = f->severity;
	}
	return worst;
}

#define EXPECT_PICKLE_VERDICT(r, want)                                                                    \
	cr_expect(pickle_verdict(r) == (want), "pickle verdict: got %s, want %s",                           \
	          ti_scan_severity_name(pickle_verdict(r)), ti_scan_severity_name(want))

#define EXPECT_VERDICT(r, want)                                                                        \
	cr_expect((r)->verdict == (want), "verdict: got %s, want %s", ti_scan_severity_name((r)->verdict), \
	          ti_scan_severity_name(want))

Test(scan, finds_os_system_named_by_GLOBAL_and_gives_its_offset)
{
	/* PROTO 2, GLOBAL posix.system, BINUNICODE 'id', TUPLE1, REDUCE, STOP */
	ti_scan_report *r = SCAN("\x80\x02" "cposix\nsystem\n" "X\x02\x00\x00\x00id" "\x85R.");
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	EXPECT_STR(r->format, "pickle");
	EXPECT_INT(r->pickles, 1);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->module, "posix");
	EXPECT_STR(f->name, "system");
	EXPECT_STR(f->opcode, "GLOBAL");
	EXPECT_INT(f->offset, 2);
}

Test(scan, finds_a_STACK_GLOBAL_built_from_memoized_strings)
{
	/* 'os' and 'system' are memoized first, as a harmless tuple; later fetched for STACK_GLOBAL */
	ti_scan_report *r = SCAN("\x80\x04" "\x8c\x02os\x94" "\x8c\x06system\x94" "\x86\x94" "0"
	                         "h\x00h\x01\x93" "\x8c\x02id\x85R.");
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->opcode, "STACK_GLOBAL");
	EXPECT_STR(f->module, "os");
	EXPECT_INT(f->offset, 23);
}

Test(scan, reads_a_frame_as_torch_loads_c_unpickler_does)
{
	/* fickling's frame-boundary case: pickletools sees a 263-byte BINBYTES, torch.load runs posix.system */
	static const char pickle[] = "\x80\x05N(\x95\x02\x00\x00\x00\x00\x00\x00\x00" "B\x07\x01\x00\x00\x00\x00"
	                             "cposix\nsystem\nVid\n\x85R(NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"
	                             "NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"
	                             "NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"
	                             "NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN1.";
	ti_scan_report *r = SCAN(pickle);
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->module, "posix");
	EXPECT_STR(f->name, "system");
	const ti_scan_finding *how = worst_finding(r, TI_SCAN_SUSPICIOUS);
	cr_assert(how, "the frame crossing is not reported");
	cr_expect(strstr(how->message, "past the end of its FRAME"), "got '%s'", how->message);
}

Test(scan, a_protocol_0_text_that_names_a_global_is_a_pickle_even_when_it_breaks_later)
{
	ti_scan_report *r = SCAN("cbuiltins\nexec\n(X>\nf = open('my_file.txt', 'a'); ");
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->name, "exec");
	/* text that names no importable global stays text */
	r = SCAN("copyright 2020\nall rights reserved\n");
	cr_expect(r->not_model, "plain text was taken for a pickle");
}

Test(scan, finds_a_protocol_0_INST)
{
	ti_scan_report *r = SCAN("(S'id'\nios\nsystem\n.");
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->opcode, "INST");
	EXPECT_STR(f->kind, "call");
	EXPECT_INT(r->globals, 1);
}

Test(scan, finds_a_protocol_1_OBJ_of_a_function_outside_the_allow_list)
{
	/* MARK, GLOBAL mylib.run, 'x', OBJ: the global alone is unknown; calling it is dangerous */
	ti_scan_report *r = SCAN("(cmylib\nrun\nX\x01\x00\x00\x00xo.");
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->opcode, "OBJ");
	cr_expect(worst_finding(r, TI_SCAN_UNKNOWN) != NULL, "the global itself is listed as unknown");
}

Test(scan, calls_of_what_a_call_returned_are_dangerous)
{
	/* mylib.Factory() is unknown and built by NEWOBJ; REDUCE on its result chooses a function at load time */
	ti_scan_report *r = SCAN("\x80\x02" "cmylib\nFactory\n)\x81" ")R.");
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->opcode, "REDUCE");
	cr_expect(strstr(f->message, "mylib.Factory returned") != NULL, "message: %s", f->message);
}

Test(scan, BUILD_on_a_global_itself_is_dangerous)
{
	ti_scan_report *r = SCAN("\x80\x02" "ccollections\nOrderedDict\n}b.");
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->kind, "build");
}

Test(scan, a_NEWOBJ_of_a_user_class_is_unknown)
{
	ti_scan_report *r = SCAN("\x80\x02" "c__main__\nNet\n)\x81}b.");
	EXPECT_VERDICT(r, TI_SCAN_UNKNOWN);
}

Test(scan, a_state_dict_of_allowed_globals_is_safe)
{
	/* OrderedDict() with one key holding torch.float32 */
	ti_scan_report *r = SCAN("\x80\x02" "ccollections\nOrderedDict\n)R" "X\x01\x00\x00\x00w" "ctorch\nfloat32\ns.");
	EXPECT_PICKLE_VERDICT(r, TI_SCAN_SAFE);
	EXPECT_INT(r->globals, 2);
}

Test(scan, allow_makes_a_global_safe_by_pattern)
{
	static const char *const allow[] = {"argparse.*"};
	ti_scan_options opt = {allow, 1, 0};
	const char pickle[] = "\x80\x02" "cargparse\nNamespace\n)\x81}b.";
	ti_scan_report *r = scan_bytes(pickle, sizeof(pickle) - 1, &opt);
	EXPECT_PICKLE_VERDICT(r, TI_SCAN_SAFE);
}

Test(scan, a_bare_pickle_of_allowed_globals_is_still_unknown_as_a_file)
{
	ti_scan_report *r = SCAN("\x80\x02" "ccollections\nOrderedDict\n)R.");
	EXPECT_VERDICT(r, TI_SCAN_UNKNOWN);
	EXPECT_STR(r->format, "pickle");
}

Test(scan, repeats_of_a_global_are_one_finding_counted)
{
	ti_scan_report *r = SCAN("\x80\x02(cos\nsystem\ncos\nsystem\ncos\nsystem\nl.");
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_INT(f->count, 3);
	EXPECT_INT(f->offset, 3);
}

Test(scan, reads_every_pickle_of_a_stream_with_offsets_in_the_file)
{
	/* a harmless pickle, then one that calls eval */
	ti_scan_report *r = SCAN("\x80\x02K\x01." "\x80\x02" "cbuiltins\neval\n" "X\x01\x00\x00\x00" "1\x85R.");
	EXPECT_INT(r->pickles, 2);
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(r, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_INT(f->offset, 7); /* the second pickle starts at 5; its GLOBAL follows PROTO */
}

Test(scan, a_STACK_GLOBAL_of_values_that_are_not_strings_is_dangerous_and_unreadable)
{
	ti_scan_report *r = SCAN("\x80\x04K\x01K\x02\x93.");
	EXPECT_VERDICT(r, TI_SCAN_DANGEROUS);
	cr_expect(r->unreadable, "the pickle fails after the finding");
}

Test(scan, a_broken_pickle_is_unreadable_with_its_offset)
{
	ti_scan_report *r = SCAN("\x80\x02\xff.");
	cr_expect(r->unreadable);
	EXPECT_INT(r->error.offset, 2);
	EXPECT_VERDICT(r, TI_SCAN_SAFE);
}

Test(scan, bytes_after_the_last_pickle_are_suspicious)
{
	ti_scan_report *r = SCAN("\x80\x02K\x01.PK\x03\x04hidden zip");
	EXPECT_VERDICT(r, TI_SCAN_SUSPICIOUS);
}

Test(scan, a_fixture_checkpoint_is_safe_and_lists_its_globals)
{
	ti_error err;
	ti_error_clear(&err);
	ti_scan_options opt = {NULL, 0, 1};
	ASSERT_STATUS(ti_scan_file("fixtures/resnet18_small.pt", &opt, &report, &err), TI_OK, err);
	EXPECT_VERDICT(report, TI_SCAN_SAFE);
	EXPECT_STR(report->format, "torch-zip");
	cr_expect(report->count >= 3, "allowed globals are listed: %zu", report->count);
	EXPECT_STR(report->findings[0].record, "resnet18_small/data.pkl");
}

Test(scan, a_missing_file_is_a_report_not_an_error)
{
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_scan_file("fixtures/no-such-file.pt", NULL, &report, &err), TI_OK, err);
	cr_expect(report->unreadable);
	EXPECT_INT(report->error.code, TI_E_IO);
}

Test(scan, the_checkpoint_reader_judges_data_pkl_as_scan_does)
{
	ti_error err;
	ti_error_clear(&err);
	ti_ckpt *ckpt = NULL;
	ASSERT_STATUS(ti_ckpt_open("fixtures/broken/os_system.pt", NULL, &ckpt, &err), TI_OK, err);
	const ti_scan_finding *f;
	size_t n;
	cr_expect(ti_ckpt_safety(ckpt, &f, &n) == TI_SCAN_DANGEROUS);
	cr_assert(n >= 1);
	EXPECT_STR(f[0].module, "posix");
	EXPECT_STR(f[0].record, "archive/data.pkl");
	ti_ckpt_close(ckpt);
	ASSERT_STATUS(ti_ckpt_open("fixtures/training_ckpt.pt", NULL, &ckpt, &err), TI_OK, err);
	cr_expect(ti_ckpt_safety(ckpt, &f, &n) == TI_SCAN_UNKNOWN);
	ti_ckpt_close(ckpt);
	ASSERT_STATUS(ti_ckpt_open("fixtures/resnet18_small.pt", NULL, &ckpt, &err), TI_OK, err);
	cr_expect(ti_ckpt_safety(ckpt, &f, &n) == TI_SCAN_SAFE);
	EXPECT_INT(n, 0);
	ti_ckpt_close(ckpt);
}

Test(scan, a_persistent_id_that_is_not_a_storage_is_suspicious)
{
	/* ('module', 'x') as BINPERSID: the legacy loader's module ids, refused by weights_only */
	ti_scan_report *r = SCAN("\x80\x02X\x06\x00\x00\x00moduleX\x01\x00\x00\x00x\x86Q.");
	EXPECT_VERDICT(r, TI_SCAN_SUSPICIOUS);
	ti_scan_report_free(report);
	report = NULL;
	r = SCAN("\x80\x02X\x07\x00\x00\x00storageX\x01\x00\x00\x00x\x86Q.");
	EXPECT_PICKLE_VERDICT(r, TI_SCAN_SAFE);
}

Test(scan, names_the_copy_of_a_record_whose_name_is_given_twice)
{
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_scan_file("fixtures/malicious/zip_duplicate_data_pkl.pt", NULL, &report, &err), TI_OK, err);
	EXPECT_VERDICT(report, TI_SCAN_DANGEROUS);
	const ti_scan_finding *f = worst_finding(report, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->record, "archive/data.pkl (entry 1)");
	cr_expect(worst_finding(report, TI_SCAN_SUSPICIOUS) != NULL, "the duplicate name is a finding too");
}

Test(scan, names_a_record_inside_a_nested_archive_through_its_outer_one)
{
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_scan_file("fixtures/malicious/nested_archive.pt", NULL, &report, &err), TI_OK, err);
	const ti_scan_finding *f = worst_finding(report, TI_SCAN_DANGEROUS);
	cr_assert(f);
	EXPECT_STR(f->record, "archive/extra/inner.pt!archive/data.pkl");
}

/* ---- TorchScript, and Enum members by value ---- */

static const policy_row torchscript_globals[] = {
	/* what TorchScript's unpickler takes of torch.jit (unpickler.cpp readGlobal), and nothing else */
	{"torch.jit._pickle", "build_intlist", TI_SCAN_SAFE},
	{"torch.jit._pickle", "build_tensorlist", TI_SCAN_SAFE},
	{"torch.jit._pickle", "build_tensor_from_id", TI_SCAN_SAFE},
	{"torch.jit._pickle", "restore_type_tag", TI_SCAN_SAFE},
	{"torch.jit._pickle", "build_anything", TI_SCAN_DANGEROUS},
	{"torch.jit", "load", TI_SCAN_DANGEROUS},
	{"__torch__.torch.nn.modules.linear", "Linear", TI_SCAN_UNKNOWN},
	{"__torch__", "Net", TI_SCAN_UNKNOWN},
};

Test(scan_policy, torchscript_builders_are_safe_by_name_and_its_classes_unknown)
{
	for (size_t i = 0; i < sizeof(torchscript_globals) / sizeof(torchscript_globals[0]); i++) {
		const policy_row *row = &torchscript_globals[i];
		ti_scan_severity got = ti_scan_classify_global(row->module, row->name, NULL);
		cr_expect(got == row->want, "%s.%s: got %s, want %s", row->module, row->name, ti_scan_severity_name(got),
		          ti_scan_severity_name(row->want));
	}
	/* REDUCE and BUILD both hand the state to a TorchScript class */
	cr_expect(ti_scan_classify_call("__torch__", "Net", "REDUCE", NULL) == TI_SCAN_UNKNOWN);
}

Test(scan, an_enum_member_by_value_is_unknown_and_names_its_package)
{
	ti_scan_report *r = SCAN("\x80\x02" "ctransformers.trainer_utils\nIntervalStrategy\n"
	                         "X\x05\x00\x00\x00steps\x85R.");
	EXPECT_PICKLE_VERDICT(r, TI_SCAN_UNKNOWN);
	bool said = false;
	for (size_t i = 0; i < r->count; i++)
		said |= !strcmp(r->findings[i].kind, "call") && strstr(r->findings[i].message, "needs transformers to load");
	cr_expect(said, "no finding says the file needs transformers");
	r = SCAN("\x80\x02" "cmypkg.options\nLevel\nK\x02\x85R.");
	EXPECT_PICKLE_VERDICT(r, TI_SCAN_UNKNOWN);
}

Test(scan, a_call_of_one_constant_that_is_no_enum_lookup_stays_dangerous)
{
	/* the standard library's constructors open files and connections */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "clogging\nFileHandler\nX\x01\x00\x00\x00x\x85R."), TI_SCAN_DANGEROUS);
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cimaplib\nIMAP4\nX\x01\x00\x00\x00h\x85R."), TI_SCAN_DANGEROUS);
	/* so do some packages' */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cpandas\nHDFStore\nX\x01\x00\x00\x00x\x85R."), TI_SCAN_DANGEROUS);
	/* a function, not a class */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "ctransformers\npipeline\nX\x01\x00\x00\x00x\x85R."), TI_SCAN_DANGEROUS);
	/* two arguments, or one that is no constant */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cmypkg\nLevel\nK\x01K\x02\x86R."), TI_SCAN_DANGEROUS);
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cmypkg\nLevel\n]\x85R."), TI_SCAN_DANGEROUS);
	/* a dunder in the module path */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cmypkg.__init__\nLevel\nK\x01\x85R."), TI_SCAN_DANGEROUS);
}

Test(scan, an_enum_member_that_is_called_or_built_on_is_dangerous)
{
	/* Level(1)() and Level(1).__setstate__({}): no Enum member is either */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cmypkg\nLevel\nK\x01\x85R)R."), TI_SCAN_DANGEROUS);
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cmypkg\nLevel\nK\x01\x85R}b."), TI_SCAN_DANGEROUS);
}

/* ---- Enum members by name (Python 3.11+): getattr(cls, 'NAME') ---- */

Test(scan, an_enum_member_by_name_is_unknown_and_names_its_package)
{
	ti_scan_report *r = SCAN("\x80\x02" "cbuiltins\ngetattr\n" "ctransformers.trainer_utils\nIntervalStrategy\n"
	                         "X\x05\x00\x00\x00STEPS\x86R.");
	EXPECT_PICKLE_VERDICT(r, TI_SCAN_UNKNOWN);
	bool said = false;
	for (size_t i = 0; i < r->count; i++)
		said |= !strcmp(r->findings[i].kind, "call") && strstr(r->findings[i].message, "needs transformers to load");
	cr_expect(said, "no finding says the file needs transformers");
}

Test(scan, getattr_named_but_never_called_is_unknown_not_safe)
{
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "]cbuiltins\ngetattr\na."), TI_SCAN_UNKNOWN);
}

Test(scan, every_other_call_of_getattr_is_dangerous)
{
	/* a private or dunder name */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cbuiltins\ngetattr\n" "cmypkg\nLevel\nX\x09\x00\x00\x00__class__\x86R."),
	                      TI_SCAN_DANGEROUS);
	/* the standard library: getattr(os, 'system') in all but name */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cbuiltins\ngetattr\n" "csubprocess\nPopen\nX\x04\x00\x00\x00wait\x86R."),
	                      TI_SCAN_DANGEROUS);
	/* a function, not a class; three arguments; a name that is no string */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cbuiltins\ngetattr\n" "cmypkg\nload\nX\x01\x00\x00\x00X\x86R."),
	                      TI_SCAN_DANGEROUS);
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cbuiltins\ngetattr\n" "cmypkg\nLevel\nX\x01\x00\x00\x00XN\x87R."),
	                      TI_SCAN_DANGEROUS);
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cbuiltins\ngetattr\n" "cmypkg\nLevel\nK\x01\x86R."), TI_SCAN_DANGEROUS);
	/* what it returned, called or built on */
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cbuiltins\ngetattr\n" "cmypkg\nLevel\nX\x04\x00\x00\x00HIGH\x86R)R."),
	                      TI_SCAN_DANGEROUS);
	EXPECT_PICKLE_VERDICT(SCAN("\x80\x02" "cbuiltins\ngetattr\n" "cmypkg\nLevel\nX\x04\x00\x00\x00HIGH\x86R}b."),
	                      TI_SCAN_DANGEROUS);
}
