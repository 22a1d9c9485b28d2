
4
xplaceholder"
dtype("
shape2
*
:
call	fuzz_callxx"
bodyR	call.body**
8
again	fuzz_callcall:1"
bodyRcall.body_1*a
call.body_14
pplaceholder"
dtype("
shape2
*
negnegp*p"negÕ
	call.body4
aplaceholder"
dtype("
shape2
*4
bplaceholder"
dtype("
shape2
*2
call	fuzz_calla"
bodyRcall.body_1*
sumaddcallb*ab"sum"bx"call"call:1(