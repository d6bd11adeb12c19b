/* The one export of bcryptprimitives.dll that Rust's standard library calls on Windows
 * (ProcessPrng, for its random seeds), for Wine releases without that DLL (Debian 12's Wine 8.0),
 * where every Rust test binary would fail to start. It forwards to RtlGenRandom
 * (advapi32's SystemFunction036). Built and placed in the Wine prefix by .ci/run; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG part = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, part))
            return FALSE;
        data += part;
        length -= part;
    }
    return TRUE;
}
