// OpDef of MsaIndexScore (SPEC.md), with its InferShape and InferDataType.
//
// Input order = msa::InputIndex = the aclnn order of SPEC §8. Everything after `key` is OPTIONAL:
// block_table, scale, atten_mask and start_loc may be absent, and declaring the lengths optional as
// well keeps every input addressable by its IR index (msa_index_score_io.h) and gives the generated
// aclnn interface the parameter names of the CANN operator (actualSeqQlenOptional, ...). That the
// lengths must be given is a rule of msa::CheckArgs, checked by the tiling like every other rule.
// No input is ValueDepend: the generated aclnn interface would then take a host aclIntArray instead
// of the aclTensor of SPEC §8 and copy its values to the host on every call. The tiling plans from
// shapes; the kernel reads the lengths and the block table from global memory.
#include "msa_host_log.h"
#include "msa_index_score_io.h"
#include "msa_index_score_tiling.h"
#include "msa_infer.h"
#include "register/op_def_registry.h"

namespace ge {

// Output [N1, T1, W] from the shapes alone, by the shared shape rules (unknown sizes stay -1).
static graphStatus InferShape(gert::InferShapeContext *context) {
  msa::TensorDesc in[msa::kNumInputs];
  msa::Attrs attrs;
  uint32_t present = 0;
  msa::Status s = msa_io::ReadInferShapeContext(context, in, &present, &attrs);
  msa::Geometry geo;
  if (s.ok()) s = msa::InferOutputShape(in, present, attrs, &geo);
  if (!s.ok()) {
    MSA_HOST_LOG_ERROR(context->GetNodeName(), "infer shape", s.message.c_str());
    return GRAPH_FAILED;
  }
  gert::Shape *out = context->GetOutputShape(0);
  out->SetDimNum(3);
  out->SetDim(0, geo.n1);
  out->SetDim(1, geo.t1);
  out->SetDim(2, geo.out_width);
  return GRAPH_SUCCESS;
}

static graphStatus InferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, DT_FLOAT);  // scores are float32 whatever the inputs
  return GRAPH_SUCCESS;
}

}  // namespace ge

namespace ops {

class MsaIndexScore : public OpDef {
 public:
  explicit MsaIndexScore(const char *name) : OpDef(name) {
    // One column per supported (query, key) pair: fp16/fp16, bf16/bf16, fp16/int8, bf16/int8.
    this->Input("query")
        .ParamType(REQUIRED)
        .DataType({ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16})
        .Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND})
        .AutoContiguous();
    this->Input("key")
        .ParamType(REQUIRED)
        .DataType({ge::DT_FLOAT16, ge::DT_BF16, ge::DT_INT8, ge::DT_INT8})
        .Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND})
        .AutoContiguous();
    this->Input("block_table")
        .ParamType(OPTIONAL)
        .DataTypeList({ge::DT_INT32})
        .FormatList({ge::FORMAT_ND})
        .AutoContiguous();
    this->Input("scale")
        .ParamType(OPTIONAL)
        .DataTypeList({ge::DT_FLOAT})
        .FormatList({ge::FORMAT_ND})
        .AutoContiguous();
    this->Input("atten_mask")
        .ParamType(OPTIONAL)
        .DataTypeList({ge::DT_INT8})
        .FormatList({ge::FORMAT_ND})
        .AutoContiguous();
    this->Input("actual_seq_qlen")
        .ParamType(OPTIONAL)
        .DataTypeList({ge::DT_INT32})
        .FormatList({ge::FORMAT_ND})
        .AutoContiguous();
    this->Input("actual_seq_klen")
        .ParamType(OPTIONAL)
        .DataTypeList({ge::DT_INT32})
        .FormatList({ge::FORMAT_ND})
        .AutoContiguous();
    this->Input("start_loc")
        .ParamType(OPTIONAL)
        .DataTypeList({ge::DT_INT32})
        .FormatList({ge::FORMAT_ND})
        .AutoContiguous();
    this->Output("score")
        .ParamType(REQUIRED)
        .DataTypeList({ge::DT_FLOAT})
        .FormatList({ge::FORMAT_ND});
    this->Attr("layout_key").AttrType(OPTIONAL).String("BBND");
    this->Attr("sparse_mode").AttrType(OPTIONAL).Int(3);
    this->Attr("init_blocks").AttrType(OPTIONAL).Int(0);
    this->Attr("local_blocks").AttrType(OPTIONAL).Int(1);

    this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);
    this->AICore().SetTiling(optiling::MsaIndexScoreTilingFunc);
    OpAICoreConfig config;
    config.DynamicCompileStaticFlag(true)
        .DynamicFormatFlag(false)
        .DynamicRankSupportFlag(true)
        .DynamicShapeSupportFlag(true)
        .NeedCheckSupportFlag(false)
        .PrecisionReduceFlag(true);
    this->AICore().AddConfig("ascend910b", config);     // Atlas A2
    this->AICore().AddConfig("ascend910_93", config);   // Atlas A3
  }
};

OP_ADD(MsaIndexScore);

}  // namespace ops
