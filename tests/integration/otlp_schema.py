"""otlp_schema.py: the OTLP profiles schema (opentelemetry-proto v1.11.0, profiles/v1development),
written here from the specification's field numbers with Python's protobuf package, so that the
integration tests encode and decode OTLP independently of scorch's own codec.

    from otlp_schema import msg
    req = msg("ExportProfilesServiceRequest")()

Used by otlp_ingest.sh (requests posted to the server) and otlp_export.sh (the agent's requests
received by a sink and decoded here). Needs /usr/bin/python3 with python3-protobuf.
"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto
STRING, BOOL, INT32, INT64, UINT32, UINT64 = F.TYPE_STRING, F.TYPE_BOOL, F.TYPE_INT32, F.TYPE_INT64, F.TYPE_UINT32, F.TYPE_UINT64
DOUBLE, BYTES, FIXED64, MESSAGE = F.TYPE_DOUBLE, F.TYPE_BYTES, F.TYPE_FIXED64, F.TYPE_MESSAGE
REP = "repeated"

# message name -> [(field name, number, type, message type or None, repeated?, oneof?)]
SCHEMA = {
    "AnyValue": [
        ("string_value", 1, STRING, None, False, "value"),
        ("bool_value", 2, BOOL, None, False, "value"),
        ("int_value", 3, INT64, None, False, "value"),
        ("double_value", 4, DOUBLE, None, False, "value"),
        ("array_value", 5, MESSAGE, "ArrayValue", False, "value"),
        ("kvlist_value", 6, MESSAGE, "KeyValueList", False, "value"),
        ("bytes_value", 7, BYTES, None, False, "value"),
        ("string_value_strindex", 8, INT32, None, False, "value"),
    ],
    "ArrayValue": [("values", 1, MESSAGE, "AnyValue", True, None)],
    "KeyValueList": [("values", 1, MESSAGE, "KeyValue", True, None)],
    "KeyValue": [
        ("key", 1, STRING, None, False, None),
        ("value", 2, MESSAGE, "AnyValue", False, None),
        ("key_strindex", 3, INT32, None, False, None),
    ],
    "InstrumentationScope": [
        ("name", 1, STRING, None, False, None),
        ("version", 2, STRING, None, False, None),
        ("attributes", 3, MESSAGE, "KeyValue", True, None),
        ("dropped_attributes_count", 4, UINT32, None, False, None),
    ],
    "Resource": [
        ("attributes", 1, MESSAGE, "KeyValue", True, None),
        ("dropped_attributes_count", 2, UINT32, None, False, None),
    ],
    "ProfilesDictionary": [
        ("mapping_table", 1, MESSAGE, "Mapping", True, None),
        ("location_table", 2, MESSAGE, "Location", True, None),
        ("function_table", 3, MESSAGE, "Function", True, None),
        ("link_table", 4, MESSAGE, "Link", True, None),
        ("string_table", 5, STRING, None, True, None),
        ("attribute_table", 6, MESSAGE, "KeyValueAndUnit", True, None),
        ("stack_table", 7, MESSAGE, "Stack", True, None),
    ],
    "ResourceProfiles": [
        ("resource", 1, MESSAGE, "Resource", False, None),
        ("scope_profiles", 2, MESSAGE, "ScopeProfiles", True, None),
        ("schema_url", 3, STRING, None, False, None),
    ],
    "ScopeProfiles": [
        ("scope", 1, MESSAGE, "InstrumentationScope", False, None),
        ("profiles", 2, MESSAGE, "Profile", True, None),
        ("schema_url", 3, STRING, None, False, None),
    ],
    "Profile": [
        ("sample_type", 1, MESSAGE, "ValueType", False, None),
        ("samples", 2, MESSAGE, "Sample", True, None),
        ("time_unix_nano", 3, FIXED64, None, False, None),
        ("duration_nano", 4, UINT64, None, False, None),
        ("period_type", 5, MESSAGE, "ValueType", False, None),
        ("period", 6, INT64, None, False, None),
        ("profile_id", 7, BYTES, None, False, None),
        ("dropped_attributes_count", 8, UINT32, None, False, None),
        ("original_payload_format", 9, STRING, None, False, None),
        ("original_payload", 10, BYTES, None, False, None),
        ("attribute_indices", 11, INT32, None, True, None),
    ],
    "Link": [("trace_id", 1, BYTES, None, False, None), ("span_id", 2, BYTES, None, False, None)],
    "ValueType": [("type_strindex", 1, INT32, None, False, None), ("unit_strindex", 2, INT32, None, False, None)],
    "Sample": [
        ("stack_index", 1, INT32, None, False, None),
        ("attribute_indices", 2, INT32, None, True, None),
        ("link_index", 3, INT32, None, False, None),
        ("values", 4, INT64, None, True, None),
        ("timestamps_unix_nano", 5, FIXED64, None, True, None),
    ],
    "Mapping": [
        ("memory_start", 1, UINT64, None, False, None),
        ("memory_limit", 2, UINT64, None, False, None),
        ("file_offset", 3, UINT64, None, False, None),
        ("filename_strindex", 4, INT32, None, False, None),
        ("attribute_indices", 5, INT32, None, True, None),
    ],
    "Stack": [("location_indices", 1, INT32, None, True, None)],
    "Location": [
        ("mapping_index", 1, INT32, None, False, None),
        ("address", 2, UINT64, None, False, None),
        ("lines", 3, MESSAGE, "Line", True, None),
        ("attribute_indices", 4, INT32, None, True, None),
    ],
    "Line": [
        ("function_index", 1, INT32, None, False, None),
        ("line", 2, INT64, None, False, None),
        ("column", 3, INT64, None, False, None),
    ],
    "Function": [
        ("name_strindex", 1, INT32, None, False, None),
        ("system_name_strindex", 2, INT32, None, False, None),
        ("filename_strindex", 3, INT32, None, False, None),
        ("start_line", 4, INT64, None, False, None),
    ],
    "KeyValueAndUnit": [
        ("key_strindex", 1, INT32, None, False, None),
        ("value", 2, MESSAGE, "AnyValue", False, None),
        ("unit_strindex", 3, INT32, None, False, None),
    ],
    "ExportProfilesServiceRequest": [
        ("resource_profiles", 1, MESSAGE, "ResourceProfiles", True, None),
        ("dictionary", 2, MESSAGE, "ProfilesDictionary", False, None),
    ],
    "ExportProfilesPartialSuccess": [
        ("rejected_profiles", 1, INT64, None, False, None),
        ("error_message", 2, STRING, None, False, None),
    ],
    "ExportProfilesServiceResponse": [
        ("partial_success", 1, MESSAGE, "ExportProfilesPartialSuccess", False, None),
    ],
    "Status": [("code", 1, INT32, None, False, None), ("message", 2, STRING, None, False, None)],
}

PACKAGE = "scorchtest.otlp"


def _build():
    fd = descriptor_pb2.FileDescriptorProto(name="scorchtest_otlp.proto", package=PACKAGE, syntax="proto3")
    for name, fields in SCHEMA.items():
        m = fd.message_type.add(name=name)
        oneofs = {}
        for fname, num, ftype, mtype, rep, oneof in fields:
            f = m.field.add(name=fname, number=num, type=ftype,
                            label=F.LABEL_REPEATED if rep else F.LABEL_OPTIONAL)
            if mtype:
                f.type_name = "." + PACKAGE + "." + mtype
            if oneof:
                if oneof not in oneofs:
                    oneofs[oneof] = len(m.oneof_decl)
                    m.oneof_decl.add(name=oneof)
                f.oneof_index = oneofs[oneof]
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    classes = {}
    for name in SCHEMA:
        desc = pool.FindMessageTypeByName(PACKAGE + "." + name)
        try:
            classes[name] = message_factory.GetMessageClass(desc)
        except AttributeError:  # protobuf < 4.22
            classes[name] = message_factory.MessageFactory(pool).GetPrototype(desc)
    return classes


_CLASSES = _build()


def msg(name):
    return _CLASSES[name]


class Builder:
    """Builds one ExportProfilesServiceRequest with a deduplicating dictionary."""

    def __init__(self):
        self.req = msg("ExportProfilesServiceRequest")()
        d = self.req.dictionary
        self.strings = {"": 0}
        d.string_table.append("")
        for table in (d.mapping_table, d.location_table, d.function_table, d.link_table,
                      d.attribute_table, d.stack_table):
            table.add()
        self.keys = {}

    def s(self, text):
        if text not in self.strings:
            self.strings[text] = len(self.req.dictionary.string_table)
            self.req.dictionary.string_table.append(text)
        return self.strings[text]

    def _intern(self, table, m):
        key = (id(table), m.SerializeToString(deterministic=True))
        if key not in self.keys:
            self.keys[key] = len(table)
            table.add().CopyFrom(m)
        return self.keys[key]

    def attr(self, key, value, strindex=False):
        kv = msg("KeyValueAndUnit")(key_strindex=self.s(key))
        if isinstance(value, bool):
            kv.value.bool_value = value
        elif isinstance(value, int):
            kv.value.int_value = value
        elif strindex:
            kv.value.string_value_strindex = self.s(value)
        else:
            kv.value.string_value = value
        return self._intern(self.req.dictionary.attribute_table, kv)

    def function(self, name, filename=""):
        f = msg("Function")(name_strindex=self.s(name), filename_strindex=self.s(filename))
        return self._intern(self.req.dictionary.function_table, f)

    def mapping(self, filename, start=0, limit=0, build_id=None):
        m = msg("Mapping")(memory_start=start, memory_limit=limit, filename_strindex=self.s(filename))
        if build_id:
            m.attribute_indices.append(self.attr("process.executable.build_id.gnu", build_id))
        return self._intern(self.req.dictionary.mapping_table, m)

    def location(self, functions=(), mapping=0, address=0, frame_type=None, lines=None):
        """functions: names, innermost first (several = inlined calls)."""
        loc = msg("Location")(mapping_index=mapping, address=address)
        for i, fn in enumerate(functions):
            loc.lines.add(function_index=self.function(fn), line=(lines[i] if lines else 0))
        if frame_type:
            loc.attribute_indices.append(self.attr("profile.frame.type", frame_type))
        return self._intern(self.req.dictionary.location_table, loc)

    def stack(self, locations):
        """locations: indexes, leaf first."""
        st = msg("Stack")(location_indices=list(locations))
        return self._intern(self.req.dictionary.stack_table, st)

    def resource(self, attrs, scope="scorch-test"):
        rp = self.req.resource_profiles.add()
        for k, v in attrs.items():
            kv = rp.resource.attributes.add(key=k)
            if isinstance(v, int):
                kv.value.int_value = v
            else:
                kv.value.string_value = v
        sp = rp.scope_profiles.add()
        sp.scope.name = scope
        return sp

    def profile(self, scope_profiles, sample_type, unit, period_type=None, period_unit=None,
                period=0, time_ns=0, duration_ns=0):
        p = scope_profiles.profiles.add()
        p.sample_type.type_strindex = self.s(sample_type)
        p.sample_type.unit_strindex = self.s(unit)
        if period_type:
            p.period_type.type_strindex = self.s(period_type)
            p.period_type.unit_strindex = self.s(period_unit)
        p.period = period
        p.time_unix_nano = time_ns
        p.duration_nano = duration_ns
        return p

    def sample(self, profile, stack_frames, value=None, attrs=None, timestamps=None):
        """stack_frames: function names root first (each its own native location)."""
        locs = [self.location([fn], frame_type="native") for fn in reversed(stack_frames)]
        s = profile.samples.add(stack_index=self.stack(locs))
        if value is not None:
            s.values.append(value)
        for ts in timestamps or ():
            s.timestamps_unix_nano.append(ts)
        for k, v in (attrs or {}).items():
            s.attribute_indices.append(self.attr(k, v))
        return s
