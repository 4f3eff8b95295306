#ifndef CLGRAD_UNALIGNED_8
#define CLGRAD_UNALIGNED_8
typedef char8 __attribute__((aligned(sizeof(char)))) char8_u;
typedef uchar8 __attribute__((aligned(sizeof(uchar)))) uchar8_u;
typedef short8 __attribute__((aligned(sizeof(short)))) short8_u;
typedef ushort8 __attribute__((aligned(sizeof(ushort)))) ushort8_u;
typedef int8 __attribute__((aligned(sizeof(int)))) int8_u;
typedef long8 __attribute__((aligned(sizeof(long)))) long8_u;
typedef float8 __attribute__((aligned(sizeof(float)))) float8_u;
typedef double8 __attribute__((aligned(sizeof(double)))) double8_u;
#endif
__kernel void R_16x10_rmax_where_or_f620da(__global const float* restrict in0, __global float* restrict out1) {
  const float inf_f32 = as_float(0x7f7fffffu + (get_work_dim() & 1 | get_work_dim() >> 1));
  int row = get_global_id(0);
  int row0 = row;
  float acc0 = (-inf_f32);
  float8 acc0v = (float8)((-inf_f32));
  for (int i = 0; i < 1; i++) {
    float8 v1 = *(__global const float8_u*)(in0+row0*10);
    acc0v = (((acc0v<v1)|(v1!=v1))?v1:acc0v);
  }
  for (int t = 0; t < 2; t++) {
    float v2 = in0[row0*10 + t + 8];
    acc0 = (((acc0<v2)|(v2!=v2))?v2:acc0);
  }
  acc0 = (((acc0<acc0v.s0)|(acc0v.s0!=acc0v.s0))?acc0v.s0:acc0);
  acc0 = (((acc0<acc0v.s1)|(acc0v.s1!=acc0v.s1))?acc0v.s1:acc0);
  acc0 = (((acc0<acc0v.s2)|(acc0v.s2!=acc0v.s2))?acc0v.s2:acc0);
  acc0 = (((acc0<acc0v.s3)|(acc0v.s3!=acc0v.s3))?acc0v.s3:acc0);
  acc0 = (((acc0<acc0v.s4)|(acc0v.s4!=acc0v.s4))?acc0v.s4:acc0);
  acc0 = (((acc0<acc0v.s5)|(acc0v.s5!=acc0v.s5))?acc0v.s5:acc0);
  acc0 = (((acc0<acc0v.s6)|(acc0v.s6!=acc0v.s6))?acc0v.s6:acc0);
  acc0 = (((acc0<acc0v.s7)|(acc0v.s7!=acc0v.s7))?acc0v.s7:acc0);
  long acc3 = LONG_MIN;
  long8 acc3v = (long8)(LONG_MIN);
  #pragma clang loop unroll(disable)
  for (int i = 0; i < 1; i++) {
    float8 v4 = *(__global const float8_u*)(in0+row0*10);
    int8 v5 = (v4==((float8)(acc0)));
    int8 v6 = (v4==v4);
    int8 v7 = (~v6);
    int v8 = (acc0==acc0);
    int v9 = (!v8);
    int8 v10 = (v7&((int8)(-(v9))));
    int8 v11 = (v5|v10);
    long8 v12 = ((long8)(0)+(long8)(0,1,2,3,4,5,6,7));
    long8 v13 = as_long8((as_ulong8(((long8)(10L)))-as_ulong8(v12)));
    long8 v14 = (convert_long8(v11)?v13:((long8)(0L)));
    acc3v = max(acc3v,v14);
  }
  #pragma clang loop unroll(disable)
  for (int t = 0; t < 2; t++) {
    float v15 = in0[row0*10 + t + 8];
    int v16 = (v15==acc0);
    int v17 = (v15==v15);
    int v18 = (!v17);
    int v19 = (acc0==acc0);
    int v20 = (!v19);
    int v21 = (v18&v20);
    int v22 = (v16|v21);
    long v23 = ((long)t + 8);
    long v24 = as_long((as_ulong(10L)-as_ulong(v23)));
    long v25 = (v22?v24:0L);
    acc3 = max(acc3,v25);
  }
  acc3 = max(acc3,acc3v.s0);
  acc3 = max(acc3,acc3v.s1);
  acc3 = max(acc3,acc3v.s2);
  acc3 = max(acc3,acc3v.s3);
  acc3 = max(acc3,acc3v.s4);
  acc3 = max(acc3,acc3v.s5);
  acc3 = max(acc3,acc3v.s6);
  acc3 = max(acc3,acc3v.s7);
  float acc26 = 0.0f;
  float8 acc26v = (float8)(0.0f);
  for (int i = 0; i < 1; i++) {
    long8 v27 = ((long8)(0)+(long8)(0,1,2,3,4,5,6,7));
    long v28 = as_long((as_ulong(10L)-as_ulong(acc3)));
    int8 v29 = convert_int8((v27==((long8)(v28))));
    float8 v30 = *(__global const float8_u*)(in0+row0*10);
    float8 v31 = (v29?v30:((float8)(0.0f)));
    acc26v = acc26v + v31;
  }
  for (int t = 0; t < 2; t++) {
    long v32 = ((long)t + 8);
    long v33 = as_long((as_ulong(10L)-as_ulong(acc3)));
    int v34 = (v32==v33);
    float v35 = in0[row0*10 + t + 8];
    float v36 = (v34?v35:0.0f);
    acc26 = acc26 + v36;
  }
  acc26 = acc26 + acc26v.s0;
  acc26 = acc26 + acc26v.s1;
  acc26 = acc26 + acc26v.s2;
  acc26 = acc26 + acc26v.s3;
  acc26 = acc26 + acc26v.s4;
  acc26 = acc26 + acc26v.s5;
  acc26 = acc26 + acc26v.s6;
  acc26 = acc26 + acc26v.s7;
  out1[row] = acc26;
}
